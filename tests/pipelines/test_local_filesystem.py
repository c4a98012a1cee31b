"""Hadoop's local file system without a process per file (`pipelines.runtime.local_runtime`): the session's FileSystem
and FileContext are the compiled classes, and they answer as Hadoop's own: the same permissions on new files and
folders, the same link status for links, files and absent paths. (That `radar replay` writes its tables without
starting `chmod` or `readlink` is `test_data_dirs.test_replay_works_with_a_broken_python3_first_on_path`'s.)"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError

from rebalance_radar.pipelines.runtime.local_runtime import (
    LOCAL_FILESYSTEM_CONF,
    jar_key,
    java_sources,
    local_filesystem_jar,
)

pytestmark = pytest.mark.spark


def _hadoop(spark: Any) -> tuple[Any, Any, Any]:
    jvm = spark.sparkContext._jvm
    return jvm, jvm.org.apache.hadoop.fs, spark.sparkContext._jsc.hadoopConfiguration()


def test_the_session_reads_and_writes_local_files_through_the_compiled_classes(spark: Any) -> None:
    _jvm, fs, conf = _hadoop(spark)
    assert conf.get("fs.file.impl") == LOCAL_FILESYSTEM_CONF["spark.hadoop.fs.file.impl"]
    local = fs.FileSystem.getLocal(conf)
    assert local.getClass().getName() == "radar.hadoop.ShellFreeLocalFileSystem"
    assert local.getRaw().getClass().getName() == "radar.hadoop.ShellFreeRawLocalFileSystem"
    context = fs.FileContext.getLocalFSFileContext(conf)
    assert context.getDefaultFileSystem().getClass().getName() == "radar.hadoop.ShellFreeLocalFs"


def test_new_files_and_folders_get_the_permissions_hadoop_gives_them(spark: Any, tmp_path: Path) -> None:
    jvm, fs, conf = _hadoop(spark)
    hadoops = fs.RawLocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), conf)
    ours = fs.FileSystem.getLocal(conf).getRaw()
    modes = {}
    for name, system in (("hadoop", hadoops), ("ours", ours)):
        folder = tmp_path / name
        system.mkdirs(fs.Path(str(folder / "sub")))
        system.create(fs.Path(str(folder / "sub" / "file")), True).close()
        system.setPermission(fs.Path(str(folder / "sub" / "file")), fs.permission.FsPermission("640"))
        system.create(fs.Path(str(folder / "default")), True).close()
        modes[name] = [
            stat.S_IMODE(os.stat(p).st_mode) for p in (folder / "sub", folder / "sub" / "file", folder / "default")
        ]
    assert modes["ours"] == modes["hadoop"]
    assert modes["ours"][1] == 0o640
    # a sticky bit, which java.nio cannot set, is Hadoop's own shell command's
    ours.setPermission(fs.Path(str(tmp_path / "ours" / "sub")), fs.permission.FsPermission("1777"))
    assert stat.S_IMODE(os.stat(tmp_path / "ours" / "sub").st_mode) == 0o1777


def test_link_status_is_hadoops_for_links_files_and_absent_paths(spark: Any, tmp_path: Path) -> None:
    jvm, fs, conf = _hadoop(spark)
    hadoops = fs.RawLocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), conf)
    ours = fs.FileSystem.getLocal(conf).getRaw()
    (tmp_path / "target").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "target")

    def status(system: Any, path: str) -> tuple[Any, ...]:
        try:
            found = system.getFileLinkStatus(fs.Path(path))
        except Py4JJavaError as error:
            return (error.java_exception.getClass().getName(),)
        target = found.getSymlink().toUri().getPath() if found.isSymlink() else None
        return (found.isSymlink(), found.isFile(), found.isDirectory(), found.getLen(), target)

    for name in ("link", "target", "absent", ""):
        for path in (str(tmp_path / name), f"file://{tmp_path / name}"):
            assert status(ours, path) == status(hadoops, path), path
    assert status(ours, str(tmp_path / "link"))[0] is True  # a bare path's link is a link
    assert status(ours, str(tmp_path / "absent")) == ("java.io.FileNotFoundException",)
    # a rename through FileContext (Delta's log store) still refuses to replace a file
    context = fs.FileContext.getLocalFSFileContext(conf)
    (tmp_path / "other").write_text("y")
    no_overwrite = spark.sparkContext._gateway.new_array(fs.Options.Rename, 0)
    with pytest.raises(Py4JJavaError, match="FileAlreadyExistsException"):
        context.rename(fs.Path(f"file://{tmp_path / 'other'}"), fs.Path(f"file://{tmp_path / 'target'}"), no_overwrite)
    assert (tmp_path / "target").read_text() == "x"


def test_the_jar_is_named_after_its_sources(tmp_path: Path) -> None:
    sources = java_sources()
    assert {s.name for s in sources} >= {"ShellFreeRawLocalFileSystem.java", "ShellFreeLocalFs.java"}
    hadoop = tmp_path / "hadoop-client-api-3.4.2.jar"
    changed = tmp_path / "Changed.java"
    changed.write_text(sources[0].read_text() + "\n// changed\n")
    assert jar_key(sources, hadoop) == jar_key(sources, hadoop)
    assert jar_key([*sources[:-1], changed], hadoop) != jar_key(sources, hadoop)
    assert jar_key(sources, tmp_path / "hadoop-client-api-3.4.3.jar") != jar_key(sources, hadoop)


def test_without_javac_hadoops_own_serves_and_the_first_command_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-jdk"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert local_filesystem_jar(tmp_path / "cache") is None
    first = capsys.readouterr().err
    assert "no javac" in first and "Install a JDK" in first and len(first.strip().splitlines()) == 1
    assert local_filesystem_jar(tmp_path / "cache") is None
    assert capsys.readouterr().err == ""  # said once
    assert not list((tmp_path / "cache").glob("*.jar"))


def test_the_jar_is_built_once_into_the_cache_folder(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    jar = local_filesystem_jar(cache)
    assert jar is not None and jar.parent == cache
    with zipfile.ZipFile(jar) as built:
        assert "radar/hadoop/ShellFreeLocalFileSystem.class" in built.namelist()
    built_at = jar.stat().st_mtime_ns
    assert local_filesystem_jar(cache) == jar and jar.stat().st_mtime_ns == built_at
    assert [p.name for p in cache.iterdir()] == [jar.name]  # nothing partial left beside it
