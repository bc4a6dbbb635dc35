/*
 * backing.c - the backing file that holds the emulated disk's data: opened with
 * O_DIRECT when the file system allows, read and written through aligned
 * bounce buffers (so the host page cache never holds the disk's data), and the
 * data access the device models get (device_env); small file helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_int.h"
#include "fail.h"
#include "fullio.h"
#include "timing.h"
#include "warn.h"

const char *const backing_io_names[] = { "direct", "buffered", NULL };

void *aligned_buffer(size_t bytes)
{
	void *p = aligned_alloc(ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN);

	if (p)
		memset(p, 0, bytes);   /* touch it now, before mlockall and before any IO */
	return p;
}

/* An absolute path for path (relative to the current directory), since the daemon chdirs to /. */
int absolute(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (!path || !*path) {
		out[0] = '\0';
		return 0;
	}
	if (path[0] == '/')
		return snprintf(out, len, "%s", path) >= (int)len ? -1 : 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	return snprintf(out, len, "%s/%s", cwd, path) >= (int)len ? -1 : 0;
}

/* Writes text to path atomically (a temporary file renamed over it). */
int write_file_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	bool ok = fputs(text, f) >= 0;

	if (fclose(f) || !ok || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int setup_backing(struct daemon *d, const char *path, int mode)
{
	struct stat st;

	if (absolute(path, d->backing_path, sizeof(d->backing_path)))
		return runtime_error("--backing %s: path too long", path);
	d->fd = open(d->backing_path, O_RDWR | O_CREAT | O_CLOEXEC |
		     (mode == BACKING_DIRECT ? O_DIRECT : 0), 0644);
	d->direct = d->fd >= 0 && mode == BACKING_DIRECT;
	if (d->fd < 0 && errno == EINVAL && mode == BACKING_DIRECT) {
		d->fd = open(d->backing_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (d->fd >= 0)
			warn("%s does not allow O_DIRECT; using buffered IO (the host page cache "
			     "will hold its data)", d->backing_path);
	}
	if (d->fd < 0)
		return runtime_error("cannot open --backing %s: %s", d->backing_path, strerror(errno));
	if (fstat(d->fd, &st))
		return runtime_error("cannot stat %s: %s", d->backing_path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return runtime_error("--backing %s is not a regular file", d->backing_path);
	if ((uint64_t)st.st_size < d->size && ftruncate(d->fd, (off_t)d->size))
		return runtime_error("cannot extend %s to %llu bytes: %s", d->backing_path,
				     (unsigned long long)d->size, strerror(errno));
	if (!d->direct)
		posix_fadvise(d->fd, 0, 0, POSIX_FADV_RANDOM);   /* no host read-ahead */
	return 0;
}
static int pread_full(int fd, char *buf, size_t len, uint64_t offset)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {              /* beyond the backing file's end: zeros */
			memset(buf, 0, len);
			return 0;
		}
		buf += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

/* Reads [off, off+len) through the aligned buffer buf; *out points at the bytes. */
int backing_read(struct daemon *d, char *buf, uint64_t off, size_t len, char **out)
{
	uint64_t lo = off / ALIGN * ALIGN, hi = (off + len + ALIGN - 1) / ALIGN * ALIGN;
	int err = pread_full(d->fd, buf, (size_t)(hi - lo), lo);

	*out = buf + (off - lo);
	return err;
}

int backing_write(struct daemon *d, uint64_t off, size_t len, const char *data)
{
	uint64_t lo = off / ALIGN * ALIGN, hi = (off + len + ALIGN - 1) / ALIGN * ALIGN;
	int err = 0;

	if (lo != off)
		err = pread_full(d->fd, d->iobuf, ALIGN, lo);
	if (!err && (off + len) % ALIGN && (hi - ALIGN != lo || lo == off))
		err = pread_full(d->fd, d->iobuf + (hi - ALIGN - lo), ALIGN, hi - ALIGN);
	if (err)
		return err;
	memcpy(d->iobuf + (off - lo), data, len);
	return pwrite_full(d->fd, d->iobuf, (size_t)(hi - lo), lo);
}

int env_read_data(void *ctx, uint64_t offset, void *buf, size_t len)
{
	struct daemon *d = ctx;
	char *at;
	int err;

	if (len > AUX_BYTES)
		return -EINVAL;
	err = backing_read(d, d->auxbuf, offset, len, &at);
	if (!err)
		memcpy(buf, at, len);
	return err;
}

int env_identity(void *ctx, uint64_t out[4])
{
	struct daemon *d = ctx;
	struct stat st;

	if (fstat(d->fd, &st))
		return -1;
	out[0] = (uint64_t)st.st_dev;
	out[1] = (uint64_t)st.st_ino;
	out[2] = (uint64_t)st.st_size;
	out[3] = (uint64_t)st.st_mtim.tv_sec * NS_PER_SEC + (uint64_t)st.st_mtim.tv_nsec;
	return 0;
}
