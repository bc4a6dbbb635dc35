/* fullio: see fullio.h. */
#include "fullio.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

static int write_loop(int fd, const char *buf, size_t len, uint64_t offset, int positioned)
{
	while (len) {
		ssize_t n = positioned ? pwrite(fd, buf, len, (off_t)offset) : write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

int write_full(int fd, const void *buf, size_t len)
{
	return write_loop(fd, buf, len, 0, 0);
}

int pwrite_full(int fd, const void *buf, size_t len, uint64_t offset)
{
	return write_loop(fd, buf, len, offset, 1);
}
