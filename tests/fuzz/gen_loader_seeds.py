#!/usr/bin/env python3
"""Writes the seed inputs of the loader/ELF fuzz targets (also read by tests/unit/test_loader.c).

Run from the repository root: python3 tests/fuzz/gen_loader_seeds.py
The files are committed; rerun only when changing them.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def elf(soname="libfoo.so.1", needed=("libcudart.so.13", "libc.so.6"), rpath=None,
        runpath="$ORIGIN/../nvidia/cudnn/lib:$ORIGIN", fatbin=b"\x50\xed\x55\xba" + bytes(12)):
    """A minimal ELF64 LE shared object: PT_LOAD + PT_DYNAMIC, .dynstr, .dynamic, .nv_fatbin."""
    base = 0x1000  # vaddr = file offset + base, so the PT_LOAD mapping is exercised
    dynstr = b"\0"
    offs = {}
    for s in (soname, rpath, runpath) + tuple(needed):
        if s is not None and s not in offs:
            offs[s] = len(dynstr)
            dynstr += s.encode() + b"\0"
    ehdr_size, phdr_size = 64, 56
    dynstr_off = ehdr_size + 2 * phdr_size
    dyn = []
    for n in needed:
        dyn.append((1, offs[n]))
    if soname:
        dyn.append((14, offs[soname]))
    if rpath:
        dyn.append((15, offs[rpath]))
    if runpath:
        dyn.append((29, offs[runpath]))
    dyn.append((5, dynstr_off + base))   # DT_STRTAB (address)
    dyn.append((10, len(dynstr)))        # DT_STRSZ
    dyn.append((0, 0))
    dyn_off = (dynstr_off + len(dynstr) + 7) & ~7
    dyn_bytes = b"".join(struct.pack("<qQ", t, v) for t, v in dyn)
    fat_off = dyn_off + len(dyn_bytes)
    shstr = b"\0.dynstr\0.dynamic\0.nv_fatbin\0.shstrtab\0"
    shstr_off = fat_off + len(fatbin)
    sh_off = (shstr_off + len(shstr) + 7) & ~7
    end = sh_off + 5 * 64

    def sh(name, typ, off, size, link=0, entsize=0):
        return struct.pack("<IIQQQQIIQQ", name, typ, 0, off + base if typ != 3 else 0, off, size, link, 0, 8, entsize)

    shdrs = (bytes(64) + sh(1, 3, dynstr_off, len(dynstr)) + sh(9, 6, dyn_off, len(dyn_bytes), 1, 16)
             + sh(18, 1, fat_off, len(fatbin)) + sh(29, 3, shstr_off, len(shstr)))
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, sh_off, 0, 64, 56, 2, 64, 5, 4)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, end, end, 0x1000)
    dynph = struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off + base, dyn_off + base, len(dyn_bytes), len(dyn_bytes), 8)
    out = bytearray(ehdr + load + dynph + dynstr)
    out += bytes(dyn_off - len(out)) + dyn_bytes + fatbin + shstr
    out += bytes(sh_off - len(out)) + shdrs
    return bytes(out)


def ldcache(entries, old_too=False):
    """entries: (soname, path, flags, hwcap)"""
    strings = b""
    offs = {}
    new_hdr = 48
    ent = 24
    str_base = new_hdr + ent * len(entries)
    recs = b""
    for so, path, flags, hwcap in entries:
        for s in (so, path):
            if s not in offs:
                offs[s] = str_base + len(strings)
                strings += s.encode() + b"\0"
        recs += struct.pack("<iIIIQ", flags, offs[so], offs[path], 0, hwcap)
    new = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", len(entries), len(strings), 2, 0) + recs + strings
    if not old_too:
        return new
    # old header with no entries of its own, the new cache at the next 8-byte boundary
    old = b"ld.so-1.7.0\0" + struct.pack("<I", 0)
    return old + bytes((-len(old)) % 8) + new


def write(sub, name, data):
    d = os.path.join(HERE, "corpus", sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


E = [("libcudnn.so.9", "/usr/local/cuda-13.0/lib/libcudnn.so.9", 0x0303, 0),
     ("libcudart.so.13", "/usr/local/cuda-13.0/lib/libcudart.so.13", 0x0303, 0),
     ("libcudart.so.12", "/usr/lib32/libcudart.so.12", 0x0003, 0),
     ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x0303, 0)]
write("elf", "minimal.so", elf())
write("elf", "rpath.so", elf(soname=None, needed=("libnccl.so.2",), rpath="/opt/rp:$ORIGIN/lib", runpath=None))
write("elf", "truncated.so", elf()[:150])
write("ldcache", "new.cache", ldcache(E))
write("ldcache", "old-new.cache", ldcache(E, old_too=True))
bad = bytearray(ldcache(E))
struct.pack_into("<I", bad, 20, 0x7fffffff)  # nlibs far beyond the file
write("ldcache", "huge-nlibs.cache", bytes(bad))
bad = bytearray(ldcache(E))
struct.pack_into("<I", bad, 48 + 4, 0xfffffff0)  # a key offset outside the file
write("ldcache", "bad-offset.cache", bytes(bad))
write("ldcache", "truncated.cache", ldcache(E)[:70])
write("ldconf", "debian.conf", b"include /etc/ld.so.conf.d/*.conf\n\n")
write("ldconf", "dirs.conf", b"# comment\n/usr/local/cuda-12.4/lib64/\n  /opt/x=libc6  # t\nrelative/dir\nhwcap 1 foo\ninclude  a.conf b/*.conf\n/usr/local/cuda-12.4/lib64\n")
write("ldconf", "binary.conf", bytes(range(256)))
write("cuda_version", "version.json", b'{\n  "cuda" : {"name" : "CUDA SDK", "version" : "12.4.1"},\n  "cuda_cudart" : {"name" : "CUDA Runtime (cudart)", "version" : "12.4.127"}\n}\n')
write("cuda_version", "version.txt", b"CUDA Version 11.8.89\n")
write("cuda_version", "nvcc.out", b"nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n")
write("cuda_version", "cudnn_version.h", b"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 19\n#define CUDNN_PATCHLEVEL 0\n")
write("cuda_version", "garbage.json", b'{"cuda": {"version": 12}, "cuda_cudart": []}')
