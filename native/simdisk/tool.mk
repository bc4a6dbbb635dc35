# simdisk links libfuse3; its headers live in /usr/include/fuse3 (pkg-config says where).
CFLAGS_simdisk := $(shell pkg-config --cflags fuse3) -DFUSE_USE_VERSION=31
LDLIBS_simdisk := $(shell pkg-config --libs fuse3)
