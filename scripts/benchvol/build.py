"""Execution: mkntfs, mount ntfs-3g, create everything through FUSE (forked client processes), unmount and
sparse-copy the image into place."""

import errno
import gc
import multiprocessing
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from .words import ADJS, BASE_MOUNT_OPTS, GIB, MIB, NOUNS, REALDATA_MAX, RESIDENT_MAX, TECH, VERBS
from .model import FA_ARCHIVE, nt_time


# ---------------------------------------------------------------------------
# Execution: mkntfs, mount ntfs-3g, create everything through FUSE
# ---------------------------------------------------------------------------

_T = None          # the Tree, shared with forked workers
_DP = None         # absolute directory paths under the mount point
_PATTERN = None
_CHUNK = None


def _init_pattern(seed):
    global _PATTERN, _CHUNK
    r = random.Random(seed)
    words = NOUNS + ADJS + VERBS + TECH
    out, n = [], 0
    while n < 2 * REALDATA_MAX + 4096:
        line = " ".join(r.choice(words) for _ in range(r.randint(4, 14))) + "\r\n"
        out.append(line)
        n += len(line)
    _PATTERN = "".join(out).encode()
    _CHUNK = bytes(r.getrandbits(8) for _ in range(4096))


def _content(f, n):
    off = (f * 7919) % (len(_PATTERN) - n - 1)
    return _PATTERN[off:off + n]


def _times(f, t):
    c = nt_time(t)
    m = nt_time(t + (f * 2654435761) % (90 * 86400))
    a = m + 10_000_000 * ((f * 40503) % (30 * 86400))
    # system.ntfs_times layout: creation, last data change, last access, last MFT change
    return struct.pack("<4Q", c, m, a, m)


def _ensure_dir(d):
    try:
        os.mkdir(_DP[d])
    except FileExistsError:
        pass
    except FileNotFoundError:
        _ensure_dir(_T.d_parent[d])
        try:
            os.mkdir(_DP[d])
        except FileExistsError:
            pass


def _mkdir(d):
    T = _T
    p = _DP[d]
    try:
        os.mkdir(p)
    except FileExistsError:
        pass
    except FileNotFoundError:
        _ensure_dir(T.d_parent[d])
        try:
            os.mkdir(p)
        except FileExistsError:
            pass
    s = T.dos_d.get(d)
    if s:
        os.setxattr(p, "system.ntfs_dos_name", s.encode(), follow_symlinks=False)
    a = T.attr_d.get(d)
    if a:
        os.setxattr(p, "system.ntfs_attrib", struct.pack("<I", a), follow_symlinks=False)
    rp = T.reparse_d.get(d)
    if rp:
        os.setxattr(p, "system.ntfs_reparse_data", rp, follow_symlinks=False)


def _mkfile(f):
    T = _T
    d = T.f_dir[f]
    p = _DP[d] + "/" + T.f_name[f]
    size = T.f_size[f]
    t = T.f_time[f]
    ads = T.ads.get(f)
    dos = T.dos_f.get(f)
    attr = T.attr_f.get(f)
    rp = T.reparse_f.get(f)
    if not (size or t or ads or dos or attr or rp):
        try:
            os.mknod(p, 0o100644)
        except FileNotFoundError:
            _ensure_dir(d)
            os.mknod(p, 0o100644)
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(p, flags, 0o644)
    except FileNotFoundError:
        _ensure_dir(d)
        fd = os.open(p, flags, 0o644)
    try:
        if size:
            frag = T.frag_f.get(f)
            if frag:
                step = size // frag
                for j in range(frag):
                    off = (j * step + ((j * 7919) % max(1, step // 2))) // 4096 * 4096
                    os.pwrite(fd, _CHUNK, off)
                os.ftruncate(fd, size)
            elif size <= RESIDENT_MAX or f in T.real_f:
                os.write(fd, _content(f, size))
            else:
                os.ftruncate(fd, size)
        if ads:
            for sname, data in ads:
                if _ADS_XATTR:
                    os.setxattr(fd, "user." + sname, data)
                    continue
                afd = os.open(p + ":" + sname, os.O_WRONLY | os.O_CREAT, 0o644)
                try:
                    if data:
                        os.write(afd, data)
                finally:
                    os.close(afd)
        if dos:
            os.setxattr(fd, "system.ntfs_dos_name", dos.encode())
        if attr:
            os.setxattr(fd, "system.ntfs_attrib", struct.pack("<I", attr | FA_ARCHIVE))
        if rp:
            os.setxattr(fd, "system.ntfs_reparse_data", rp)
        if t:
            os.setxattr(fd, "system.ntfs_times", _times(f, t))
    finally:
        os.close(fd)


def _oppath(op):
    if op < 0:
        return _DP[-op]
    return _DP[_T.f_dir[op]] + "/" + _T.f_name[op]


def _w_create(job):
    a, z = job
    order = _T.order
    errs = []
    for k in range(a, z):
        op = order[k]
        try:
            if op < 0:
                _mkdir(-op)
            else:
                _mkfile(op)
        except OSError as e:
            errs.append(f"create {_oppath(op)!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


def _w_link(job):
    a, z = job
    T = _T
    errs = []
    for k in range(a, z):
        t, d, name = T.links[k]
        src = _DP[T.f_dir[t]] + "/" + T.f_name[t]
        try:
            os.link(src, _DP[d] + "/" + name)
        except OSError as e:
            errs.append(f"link {src!r} -> {name!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


def _w_dirtimes(job):
    a, z = job
    T = _T
    errs = []
    for d in _DIRTIME_LIST[a:z]:
        try:
            os.setxattr(_DP[d], "system.ntfs_times", _times(d, T.d_time[d]), follow_symlinks=False)
        except OSError as e:
            errs.append(f"times {_DP[d]!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


_DEL_LIST = []
_DIRTIME_LIST = []
_ADS_XATTR = False      # lowntfs-3g has no streams_interface=windows; use user.* xattrs


def _w_unlink(job):
    a, z = job
    errs = []
    for f in _DEL_LIST[a:z]:
        try:
            os.unlink(_oppath(f))
        except OSError as e:
            errs.append(f"unlink {_oppath(f)!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


def _w_init():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Progress:
    def __init__(self, phase, total, quiet=False):
        self.phase, self.total, self.quiet = phase, total, quiet
        self.done = 0
        self.t0 = self.last = time.time()
        self.tty = sys.stderr.isatty()

    def add(self, n):
        self.done += n
        now = time.time()
        if not self.quiet and now - self.last >= (0.5 if self.tty else 5.0):
            self.last = now
            self._print(now, end="\r" if self.tty else "\n")

    def _print(self, now, end):
        el = max(1e-6, now - self.t0)
        rate = self.done / el
        eta = (self.total - self.done) / rate if rate > 0 else 0
        pct = 100.0 * self.done / self.total if self.total else 100.0
        sys.stderr.write(f"[{self.phase:8s}] {self.done:>10,}/{self.total:,} ({pct:5.1f}%) "
                         f"{rate:>8,.0f}/s  elapsed {el:6.1f}s  eta {eta:5.0f}s   {end}")
        sys.stderr.flush()

    def finish(self):
        now = time.time()
        if not self.quiet:
            self._print(now, end="\n")
        return now - self.t0


def run_phase(pool, phase, fn, n, chunk, quiet):
    if n == 0:
        return 0.0
    jobs = [(a, min(n, a + chunk)) for a in range(0, n, chunk)]
    prog = Progress(phase, n, quiet)
    it = pool.imap_unordered(fn, jobs) if pool else map(fn, jobs)
    errs = []
    for done, e in it:
        prog.add(done)
        if e:
            errs.extend(e)
            break
    if errs:
        raise RuntimeError(f"{phase} failed:\n  " + "\n  ".join(errs[:10]))
    return prog.finish()


def estimate_bytes(b):
    """Rough space needed inside the volume (bytes)."""
    nrec = len(b.order) + sum(v // 40 for v in b.frag_f.values()) + 64
    mft = nrec * 1024
    names = sum(len(b.f_name[op]) if op >= 0 else len(b.d_name[-op]) for op in b.order)
    idx = (names * 2 + len(b.order) * 100) * 3
    data = sum(b.f_size[f] for f in b.real_f) + len(b.frag_f) * 0 + sum(b.frag_f.values()) * 4096
    data += sum(len(x) for v in b.ads.values() for _, x in v if len(x) > 400)
    return int(mft * 1.15 + idx + data + 128 * MIB)


def mount(driver, img, mnt, opts):
    proc = subprocess.Popen([driver, img, mnt, "-o", opts + ",no_detach"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.time()
    while not os.path.ismount(mnt):
        if proc.poll() is not None:
            raise RuntimeError(f"{driver} exited: {proc.stderr.read().decode(errors='replace')}")
        if time.time() - t0 > 30:
            proc.kill()
            raise RuntimeError(f"{driver} did not mount within 30s")
        time.sleep(0.05)
    return proc


def unmount(mnt, proc, quiet):
    if proc is None:
        return
    t0 = time.time()
    if os.path.ismount(mnt):
        for i in range(40):
            res = subprocess.run(["umount", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if res.returncode == 0 or not os.path.ismount(mnt):
                break
            time.sleep(0.25)
        else:
            subprocess.run(["umount", "-l", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=900)       # ntfs-3g flushes and closes the image after umount returns
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if not quiet:
        sys.stderr.write(f"[unmount ] done in {time.time() - t0:.1f}s\n")


def mem_available():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def pick_stage_dir(args, est):
    """tmpfs staging makes ntfs-3g's many small pread/pwrite calls ~15-20% cheaper."""
    if args.stage_dir == "none":
        return None
    if args.stage_dir != "auto":
        return args.stage_dir
    d = "/dev/shm"
    try:
        ok = (os.path.isdir(d) and shutil.disk_usage(d).free > 2 * est + GIB
              and mem_available() > 2 * est + 4 * GIB)
    except OSError:
        ok = False
    return d if ok else None


def copy_sparse(src, dst, size):
    """Copy only the data regions of src (and skip all-zero MiB chunks)."""
    zero = bytes(MIB)
    with open(src, "rb") as fs, open(dst, "wb") as fd:
        fd.truncate(size)
        sfd = fs.fileno()
        off = 0
        while off < size:
            try:
                data = os.lseek(sfd, off, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:
                    break
                raise
            hole = os.lseek(sfd, data, os.SEEK_HOLE)
            pos = data
            while pos < hole:
                n = min(MIB, hole - pos)
                buf = os.pread(sfd, n, pos)
                if buf != zero[:len(buf)]:
                    os.pwrite(fd.fileno(), buf, pos)
                pos += len(buf)
            off = hole


def build_image(args, b, img):
    global _T, _DP, _DEL_LIST, _DIRTIME_LIST
    est = estimate_bytes(b)
    size = args.size_gib * GIB if args.size_gib else max(4 * GIB, -(-est * 3 // GIB) * GIB)
    free = shutil.disk_usage(os.path.dirname(os.path.abspath(img))).free
    if free < est * 1.5:
        raise RuntimeError(f"not enough free space: need ~{est * 1.5 / GIB:.1f} GiB, have {free / GIB:.1f} GiB")
    final = img
    stage = pick_stage_dir(args, est)
    if stage:
        img = os.path.join(stage, f"uffs-bench-{os.getpid()}.img.partial")
    if os.path.exists(img):
        os.unlink(img)
    try:
        timings = _build(args, b, img, size)
        if stage:
            t0 = time.time()
            copy_sparse(img, final, size)
            timings["copy_out"] = time.time() - t0
            if not args.quiet:
                sys.stderr.write(f"[copy    ] {stage} -> {os.path.dirname(final)} in {timings['copy_out']:.1f}s\n")
    finally:
        if stage and os.path.exists(img):
            os.unlink(img)
    return size, timings


def _build(args, b, img, size):
    global _T, _DP, _DEL_LIST, _DIRTIME_LIST
    with open(img, "wb") as fh:
        fh.truncate(size)
    t0 = time.time()
    subprocess.run(["mkntfs", "-F", "-f", "-q", "-L", "UFFS-BENCH", "-c", "4096", img, ], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not args.quiet:
        sys.stderr.write(f"[mkntfs  ] {size / GIB:.0f} GiB volume formatted in {time.time() - t0:.1f}s ({img})\n")
    mnt = tempfile.mkdtemp(prefix="uffs-bench-mnt-")
    proc = None
    pool = None
    timings = {}
    try:
        global _ADS_XATTR
        opts = BASE_MOUNT_OPTS + ("," + args.mount_opts if args.mount_opts else "")
        if args.driver == "lowntfs-3g":
            opts = opts.replace("streams_interface=windows", "streams_interface=xattr")
            _ADS_XATTR = True
        proc = mount(args.driver, img, mnt, opts)
        _T = b
        _DP = [mnt + "/" + b.dpath(d) if d else mnt for d in range(len(b.d_name))]
        _DEL_LIST = sorted(b.deleted_f)
        _DIRTIME_LIST = [-op for op in b.order if op < 0 and b.d_time[-op] and -op not in b.reparse_d
                         and -op not in b.deleted_d]
        _init_pattern(args.seed)
        gc.collect()
        gc.freeze()
        if args.jobs > 1:
            pool = multiprocessing.get_context("fork").Pool(args.jobs, initializer=_w_init)
        q = args.quiet
        timings["create"] = run_phase(pool, "create", _w_create, len(b.order), 400, q)
        timings["links"] = run_phase(pool, "links", _w_link, len(b.links), 400, q)
        timings["dirtimes"] = run_phase(pool, "dirtimes", _w_dirtimes, len(_DIRTIME_LIST), 1000, q)
        timings["delete"] = run_phase(pool, "delete", _w_unlink, len(_DEL_LIST), 400, q)
        t0 = time.time()
        for d in sorted(b.deleted_d, key=lambda d: -b.d_depth[d]):
            os.rmdir(_DP[d])
        timings["delete"] += time.time() - t0
        if pool:
            pool.close()
            pool.join()
            pool = None
    finally:
        if pool:
            pool.terminate()
            pool.join()
        t0 = time.time()
        unmount(mnt, proc, args.quiet)
        timings["unmount"] = time.time() - t0
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return timings
