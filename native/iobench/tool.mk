# iobench's io_uring engine (engine_io_uring.c) links liburing.
LDLIBS_iobench := -luring
