"""A model folder as a tar blob: it comes back file for file, and a blob someone else wrote
that reaches outside its folder or holds a link is refused before anything is written."""

from __future__ import annotations

import filecmp
import io
import tarfile

import pytest

from engine.errors import ProjectError
from engine.store.folder_blobs import tar_folder, untar_folder


def test_a_folder_comes_back_file_for_file(tmp_path):
    src = tmp_path / "model"
    (src / "1_Pooling").mkdir(parents=True)
    (src / "config.json").write_text('{"a": 1}', encoding="utf-8")
    (src / "1_Pooling" / "config.json").write_text("{}", encoding="utf-8")
    (src / "model.safetensors").write_bytes(bytes(range(256)) * 9000)   # over one copy chunk
    (src / "empty").mkdir()
    dst = tmp_path / "back"
    untar_folder(tar_folder(src), dst)
    compared = filecmp.dircmp(src, dst)
    assert not (compared.left_only or compared.right_only or compared.diff_files)
    assert not filecmp.dircmp(src / "1_Pooling", dst / "1_Pooling").diff_files
    assert (dst / "empty").is_dir()
    with pytest.raises(ProjectError, match="already exists"):
        untar_folder(tar_folder(src), dst)


def _tar(*members: tuple[str, bytes | None, bytes]) -> bytes:
    """A tar of (name, content or None for a folder, type) members, as anyone could write."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE or kind == tarfile.LNKTYPE:
                info.linkname = "../../outside"
            info.size = len(content or b"")
            tar.addfile(info, io.BytesIO(content) if content else None)
    return buffer.getvalue()


@pytest.mark.parametrize("member", [
    ("../escape.txt", b"x", tarfile.REGTYPE),
    ("/etc/escape.txt", b"x", tarfile.REGTYPE),
    ("a/../../escape.txt", b"x", tarfile.REGTYPE),
    ("..\\escape.txt", b"x", tarfile.REGTYPE),
    ("C:escape.txt", b"x", tarfile.REGTYPE),
    ("link", None, tarfile.SYMTYPE),
    ("hard", None, tarfile.LNKTYPE),
    ("fifo", None, tarfile.FIFOTYPE),
], ids=["dotdot", "absolute", "nested-dotdot", "backslash", "drive", "symlink", "hardlink",
        "fifo"])
def test_a_blob_reaching_outside_its_folder_is_refused_before_anything_is_written(
        tmp_path, member):
    data = _tar(("config.json", b"{}", tarfile.REGTYPE), member)
    dst = tmp_path / "inside" / "model"
    with pytest.raises(ProjectError, match="refusing to unpack"):
        untar_folder(data, dst)
    assert not dst.exists()
    assert list(tmp_path.iterdir()) == []            # not even the parent folder
