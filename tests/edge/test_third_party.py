"""dtorch.edge.third_party: libsodium's sources for dtorch-agent come from the pinned PyNaCl sdist, checked by
sha256 and extracted without path traversal; every failure is one line that says what to do."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from dtorch.edge import third_party as tp


def _tarball(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_cached_tree_is_complete():
    tree = tp.libsodium_source(fetch=False)  # scripts/setup.sh fetched it
    src = tree / "src" / "libsodium"
    assert all((src / rel).is_file() for rel in tp.LIBSODIUM_SOURCES)
    version = (tp.libsodium_include(tree) / "sodium" / "version.h").read_text()
    assert f'"{tp.LIBSODIUM_VERSION}"' in version and "@" not in version


def test_a_missing_tree_says_how_to_fetch_it(tmp_path):
    with pytest.raises(tp.ThirdPartyError, match="dtorch.edge.third_party"):
        tp.libsodium_source(fetch=False, cache=tmp_path)


def test_a_tarball_with_another_hash_is_refused(tmp_path, monkeypatch):
    (tmp_path / "dl").mkdir()
    bad = _tarball(tmp_path / "dl" / tp.PYNACL_SDIST, {"x": b"1"})
    monkeypatch.setattr(tp, "_download", lambda dest: bad)
    with pytest.raises(tp.ThirdPartyError, match="not the pinned"):
        tp.libsodium_source(cache=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("libsodium-*"))


def test_extraction_refuses_paths_outside_the_tree(tmp_path):
    root = str(tp._MEMBER_ROOT)
    for name in (f"{root}/../../evil.c", "/etc/evil", f"{root}/src/../../../x"):
        t = _tarball(tmp_path / "t.tar.gz", {name: b"x"})
        with pytest.raises(tp.ThirdPartyError, match="unsafe path"):
            tp._extract(t, tmp_path / "out")
    assert not (tmp_path / "evil.c").exists()
    t = _tarball(tmp_path / "t.tar.gz", {"pynacl-1.6.2/setup.py": b"x"})
    with pytest.raises(tp.ThirdPartyError, match="no libsodium tree"):
        tp._extract(t, tmp_path / "out2")
