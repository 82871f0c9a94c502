#!/usr/bin/python3
"""A FUSE file system serving one image file, read-only, whose chosen byte ranges fail with EIO: read errors at
the kernel for uffs's fault tests (crates/uffs/tests/faults.rs), on a kernel without device-mapper.

    eio_fs.py IMAGE MOUNTPOINT RANGES

serves IMAGE as MOUNTPOINT/image until unmounted, and MOUNTPOINT/served: the bytes of the image read so far, as
decimal text (how much a reader read, for the tests of a reader that must stop); with EIO_FS_READ_DELAY_MS set,
each read of the image waits that long first (a slow disk). RANGES is a file of byte ranges `START END` (END exclusive),
one a line; it is read again whenever it changes, so a test turns errors on and off while the image is mounted
(a missing file: no errors). A read that overlaps a range fails with EIO; the rest are read from IMAGE. The
image is served with direct_io and no attribute caching: every read reaches this program (the page cache hides
no error) and a change to IMAGE's size or time shows at once.

fusepy comes from Debian's python3-fusepy (module `fusepy`; scripts/setup.sh installs it) or PyPI (`fuse`).
"""

import errno
import os
import stat
import sys
import threading
import time

# Seconds each read of the image waits (EIO_FS_READ_DELAY_MS): a slow disk, for a reader that must stop mid-way.
READ_DELAY = float(os.environ.get("EIO_FS_READ_DELAY_MS", "0")) / 1000

try:
    from fuse import FUSE, FuseOSError, Operations
except ImportError:
    from fusepy import FUSE, FuseOSError, Operations


class EioFs(Operations):
    def __init__(self, image, ranges):
        self.image = image
        self.ranges_path = ranges
        self.fd = os.open(image, os.O_RDONLY)
        self.lock = threading.Lock()
        self.seen = None
        self.ranges = []
        self.served = 0

    def bad_ranges(self):
        try:
            st = os.stat(self.ranges_path)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            return []
        with self.lock:
            if key != self.seen:
                with open(self.ranges_path) as f:
                    self.ranges = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
                self.seen = key
            return self.ranges

    def getattr(self, path, fh=None):
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2)
        if path == "/image":
            st = os.stat(self.image)
            return dict(
                st_mode=stat.S_IFREG | 0o444,
                st_nlink=1,
                st_size=st.st_size,
                st_atime=st.st_atime,
                st_mtime=st.st_mtime,
                st_ctime=st.st_ctime,
            )
        if path == "/served":
            return dict(st_mode=stat.S_IFREG | 0o444, st_nlink=1, st_size=len(self.served_text()))
        raise FuseOSError(errno.ENOENT)

    def served_text(self):
        return b"%20d\n" % self.served

    def readdir(self, path, fh):
        return [".", "..", "image", "served"]

    def open(self, path, flags):
        if path not in ("/image", "/served"):
            raise FuseOSError(errno.ENOENT)
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise FuseOSError(errno.EROFS)
        return 0

    def read(self, path, size, offset, fh):
        if path == "/served":
            return self.served_text()[offset : offset + size]
        for start, end in self.bad_ranges():
            if offset < end and start < offset + size:
                raise FuseOSError(errno.EIO)
        if READ_DELAY:
            time.sleep(READ_DELAY)
        data = os.pread(self.fd, size, offset)
        with self.lock:
            self.served += len(data)
        return data


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    image, mountpoint, ranges = sys.argv[1:]
    FUSE(
        EioFs(os.path.abspath(image), os.path.abspath(ranges)),
        mountpoint,
        foreground=True,
        ro=True,
        direct_io=True,
        attr_timeout=0,
        entry_timeout=0,
    )


if __name__ == "__main__":
    main()
