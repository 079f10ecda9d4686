"""Zip archives written by hand, for workbooks no spreadsheet program would save: a sheet that
unpacks to gigabytes from a few megabytes (a zip bomb), a directory that lies about sizes,
parts packed with LZMA. zipfile cannot write deflate data it did not compress itself, and
compressing gigabytes would take the test a minute.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import openpyxl

_BLOCK = 16 * 2**20


@dataclass
class Part:
    name: str
    chunks: list[bytes]  # the compressed data, in order
    crc: int
    compressed: int
    size: int  # as the directory will declare it
    method: int = zipfile.ZIP_DEFLATED


def deflated(data: bytes, name: str) -> Part:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    packed = packer.compress(data) + packer.flush()
    return Part(name, [packed], zlib.crc32(data), len(packed), len(data))


def padded_xml(name: str, head: bytes, tail: bytes, unpacked: int) -> Part:
    """`head`, then spaces up to `unpacked` bytes, then `tail`, deflated in a few MB.

    A full flush empties the compressor's history, so every 16 MiB of spaces compresses
    to the same bytes: the block is compressed once and repeated.
    """
    blocks, rest = divmod(unpacked - len(head) - len(tail), _BLOCK)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(b" " * _BLOCK) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.compress(b" " * rest + tail) + packer.flush()
    crc = zlib.crc32(head)
    spaces = b" " * _BLOCK
    for _ in range(blocks):
        crc = zlib.crc32(spaces, crc)
    crc = zlib.crc32(b" " * rest + tail, crc)
    chunks = [first, *([block] * blocks), last]
    return Part(name, chunks, crc, sum(map(len, chunks)), unpacked)


def write_zip(path: Path, parts: list[Part]) -> Path:
    """Local headers, data and a central directory (no ZIP64: every size below 4 GiB)."""
    directory = []
    with path.open("wb") as out:
        for part in parts:
            offset = out.tell()
            name = part.name.encode()
            fields = (part.method, 0, 0x21, part.crc, part.compressed, part.size, len(name))
            out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, *fields, 0) + name)
            for chunk in part.chunks:
                out.write(chunk)
            directory.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0,
                                         *fields, 0, 0, 0, 0, 0, offset) + name)
        start = out.tell()
        for entry in directory:
            out.write(entry)
        size = out.tell() - start
        out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(parts), len(parts), size,
                              start, 0))
    return path


def workbook_parts(rows: list[list[object]]) -> dict[str, bytes]:
    """The unpacked parts of a small workbook openpyxl saves, by name."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Data"
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    with zipfile.ZipFile(buffer) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def repacked(path: Path, parts: dict[str, bytes], replace: dict[str, Part]) -> Path:
    """The workbook `parts` with some parts swapped for hand-made ones."""
    return write_zip(path, [replace.get(name) or deflated(data, name)
                            for name, data in parts.items()])

