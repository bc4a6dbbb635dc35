/*
 * fuse_ops.c - the FUSE operations of the mount: a root directory holding
 * disk (the emulated device: every read, write and fsync goes to serve_io in
 * serve.c), stats (a JSON snapshot of the counters taken at open) and control
 * (write-only: messages to the fault injection, `enable` or `disable`, as
 * dmsetup message passes them to dm-dust).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daemon_int.h"
#include "timing.h"
#include "warn.h"

static struct daemon *daemon_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_attr(const struct daemon *d, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atime = st->st_mtime = st->st_ctime = d->mount_time;
	st->st_blksize = ALIGN;
	switch (ino) {
	case INO_ROOT:
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		break;
	case INO_DISK:
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)d->size;
		st->st_blocks = (blkcnt_t)(d->size / 512);
		break;
	case INO_STATS:
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		break;
	case INO_CONTROL:
		st->st_mode = S_IFREG | 0200;
		st->st_nlink = 1;
		break;
	}
}

static void sd_init(void *userdata, struct fuse_conn_info *conn)
{
	struct daemon *d = userdata;
	char text[PATH_MAX * 2 + 128];

	conn->max_write = MAX_IO;
	conn->max_read = MAX_IO;
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	if (d->ready[0]) {
		snprintf(text, sizeof(text), "{\"pid\": %d, \"mountpoint\": \"%s\", \"size\": %llu}\n",
			 (int)getpid(), d->mountpoint, (unsigned long long)d->size);
		if (write_file_atomic(d->ready, text))
			warn("cannot write --ready %s: %s", d->ready, strerror(errno));
	}
}

static void sd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct daemon *d = daemon_of(req);
	struct fuse_entry_param e = { .attr_timeout = ATTR_TIMEOUT, .entry_timeout = ATTR_TIMEOUT };

	if (parent != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (strcmp(name, "disk") == 0)
		e.ino = INO_DISK;
	else if (strcmp(name, "stats") == 0)
		e.ino = INO_STATS;
	else if (strcmp(name, "control") == 0)
		e.ino = INO_CONTROL;
	else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(d, e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void sd_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino < INO_ROOT || ino > INO_CONTROL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(daemon_of(req), ino, &st);
	fuse_reply_attr(req, &st, ATTR_TIMEOUT);
}

static void sd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);
	struct stat st;

	(void)fi;
	if ((to_set & FUSE_SET_ATTR_SIZE) && !(ino == INO_CONTROL && attr->st_size == 0) &&
	    (ino != INO_DISK || (uint64_t)attr->st_size != d->size)) {
		fuse_reply_err(req, EPERM);   /* the disk has a fixed size; control is always empty */
		return;
	}
	fill_attr(d, ino, &st);
	fuse_reply_attr(req, &st, ATTR_TIMEOUT);
}

static void sd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const struct { const char *name; fuse_ino_t ino; } entries[] = {
		{ ".", INO_ROOT }, { "..", INO_ROOT }, { "disk", INO_DISK }, { "stats", INO_STATS },
		{ "control", INO_CONTROL },
	};
	char buf[1024];
	size_t used = 0;

	(void)fi;
	if (ino != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (off_t i = off; i < (off_t)(sizeof(entries) / sizeof(entries[0])); i++) {
		struct stat st = { .st_ino = entries[i].ino,
				   .st_mode = entries[i].ino == INO_ROOT ? S_IFDIR : S_IFREG };
		size_t need = fuse_add_direntry(req, buf + used, sizeof(buf) - used, entries[i].name,
						&st, i + 1);

		if (need > sizeof(buf) - used || used + need > size)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
}

struct snapshot {
	size_t len;
	char *text;
};

static void sd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);

	if (ino == INO_DISK) {
		fi->direct_io = 1;
		fi->keep_cache = 0;
		fuse_reply_open(req, fi);
		return;
	}
	if (ino == INO_CONTROL) {
		if ((fi->flags & O_ACCMODE) != O_WRONLY) {
			fuse_reply_err(req, EACCES);
			return;
		}
		fi->direct_io = 1;
		fuse_reply_open(req, fi);
		return;
	}
	if (ino != INO_STATS) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	struct snapshot *s = malloc(sizeof(*s));

	if (!s || !(s->text = stats_json(d, &s->len))) {
		free(s);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)s;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void sd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_STATS && fi->fh) {
		struct snapshot *s = (struct snapshot *)(uintptr_t)fi->fh;

		free(s->text);
		free(s);
	}
	fuse_reply_err(req, 0);
}


static void sd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);

	if (ino == INO_DISK) {
		serve_io(d, req, IO_READ, (uint64_t)off, size < MAX_IO ? size : MAX_IO, NULL);
	} else if (ino == INO_STATS) {
		const struct snapshot *s = (const struct snapshot *)(uintptr_t)fi->fh;
		size_t from = (size_t)off < s->len ? (size_t)off : s->len;
		size_t n = s->len - from < size ? s->len - from : size;

		fuse_reply_buf(req, s->text + from, n);
	} else {
		fuse_reply_err(req, EISDIR);
	}
}

static void sd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)fi;
	if (ino == INO_CONTROL) {
		struct daemon *d = daemon_of(req);

		if (setup_message(d, buf, size) == 0 || faults_message(&d->faults, buf, size, monotonic_ns()) == 0)
			fuse_reply_write(req, size);
		else
			fuse_reply_err(req, EINVAL);   /* not a message the daemon or the faults know */
		return;
	}
	if (ino != INO_DISK) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (size > MAX_IO) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	serve_io(daemon_of(req), req, IO_WRITE, (uint64_t)off, size, buf);
}

static void sd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);   /* close(2): nothing to do; fsync is the device flush */
}

static void sd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	if (ino != INO_DISK) {
		fuse_reply_err(req, 0);
		return;
	}
	serve_io(daemon_of(req), req, IO_FLUSH, 0, 0, NULL);
}

static void sd_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct daemon *d = daemon_of(req);
	struct statvfs st = {
		.f_bsize = ALIGN, .f_frsize = ALIGN, .f_blocks = d->size / ALIGN,
		.f_files = 4, .f_namemax = 255,
	};

	(void)ino;
	fuse_reply_statfs(req, &st);
}

const struct fuse_lowlevel_ops simdisk_operations = {
	.init = sd_init,
	.lookup = sd_lookup,
	.getattr = sd_getattr,
	.setattr = sd_setattr,
	.readdir = sd_readdir,
	.open = sd_open,
	.release = sd_release,
	.read = sd_read,
	.write = sd_write,
	.flush = sd_flush,
	.fsync = sd_fsync,
	.statfs = sd_statfs,
};
