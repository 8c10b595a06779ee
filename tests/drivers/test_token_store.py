"""The file token store: one private JSON file, written atomically, shared safely by
two stores, and a bad file is a clear ``TokenStoreError`` that names the file and what to do,
with no secret and no traceback from ``json``."""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
import threading
from pathlib import Path

import platformdirs
import pytest

from _mcp_io.tokens import FileTokenStore, TokenStoreError, default_token_path
from mcp_core import McpError, StoredAuthorization, TokenStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")

SERVER = "https://mcp.example.com/mcp"
OTHER = "https://other.example.com/mcp"
SECRETS = ("s3cr3t-client-secret", "s3cr3t-access-token", "s3cr3t-refresh-token")


def record(client_id: str = "client-1") -> StoredAuthorization:
    return StoredAuthorization(
        issuer="https://auth.example.com",
        client_id=client_id,
        client_secret=SECRETS[0],
        access_token=SECRETS[1],
        refresh_token=SECRETS[2],
        expires_at=1_900_000_000.0,
        scope="mcp:read",
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def no_secret_in(error: BaseException) -> None:
    text = f"{error} {error!r}"
    for secret in SECRETS:
        assert secret not in text
    assert error.__cause__ is None  # and no json traceback chained to it:
    assert error.__context__ is None or error.__suppress_context__


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "tokens.json"


def test_round_trip_and_the_file_format(path: Path) -> None:
    store = FileTokenStore(path)
    assert isinstance(store, TokenStore)
    assert store.load(SERVER) is None
    assert not path.parent.exists()  # reading creates nothing
    store.save(SERVER, record())
    assert store.load(SERVER) == record()
    assert store.load(OTHER) is None
    document = json.loads(path.read_text())
    assert document == {"version": 1, "servers": {SERVER: record().to_json()}}


def test_the_file_is_0600_its_new_directory_0700_and_so_is_the_lock(path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        FileTokenStore(path).save(SERVER, record())
    finally:
        os.umask(old_umask)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(path.with_name("tokens.json.lock")) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_an_existing_directory_is_left_as_it_is(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    FileTokenStore(directory / "tokens.json").save(SERVER, record())
    assert mode(directory) == 0o755
    assert mode(directory / "tokens.json") == 0o600


def test_a_file_others_can_read_is_tightened_with_a_warning(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileTokenStore(path)
    store.save(SERVER, record())
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="mcp_client.tokens"):
        assert store.load(SERVER) == record()
    assert mode(path) == 0o600
    assert "had mode 0644" in caplog.text
    assert "log in again" in caplog.text
    for secret in SECRETS:
        assert secret not in caplog.text


def test_a_file_that_cannot_be_tightened_is_refused(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileTokenStore(path)
    store.save(SERVER, record())
    path.chmod(0o640)

    def refuse(fd: int, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refuse)
    with pytest.raises(TokenStoreError) as caught:
        store.load(SERVER)
    message = str(caught.value)
    assert str(path) in message
    assert "mode 0640" in message
    assert f"chmod 600 {path}" in message
    assert caught.value.path == path
    no_secret_in(caught.value)


def test_saving_replaces_the_file_atomically(path: Path) -> None:
    store = FileTokenStore(path)
    store.save(SERVER, record())
    before = path.stat().st_ino
    store.save(SERVER, record("client-2"))
    assert path.stat().st_ino != before  # a new file renamed over the old one, not rewritten
    assert store.load(SERVER) == record("client-2")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileTokenStore(path)
    store.save(SERVER, record())
    before = path.read_bytes()

    def full_disk(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(TokenStoreError, match=r"cannot be written \(\[Errno 28\]") as caught:
        store.save(OTHER, record("client-2"))
    no_secret_in(caught.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileTokenStore(path)
    store.save(SERVER, record())
    before = path.read_bytes()

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.save(SERVER, record("client-2"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_a_directory_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    store = FileTokenStore(blocker / "tokens.json")
    with pytest.raises(TokenStoreError, match="cannot be written") as caught:
        store.save(SERVER, record())
    assert str(blocker / "tokens.json") in str(caught.value)
    no_secret_in(caught.value)


def test_forget_drops_one_server_and_keeps_the_others(path: Path) -> None:
    store = FileTokenStore(path)
    store.forget(SERVER)  # no file: nothing to forget, nothing written
    assert not path.exists()
    store.save(SERVER, record())
    store.save(OTHER, record("client-2"))
    store.forget(SERVER)
    assert store.load(SERVER) is None
    assert store.load(OTHER) == record("client-2")
    written = path.stat().st_mtime_ns, path.stat().st_ino
    store.forget(SERVER)  # already gone: the file is not rewritten
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == written
    store.forget(OTHER)
    assert json.loads(path.read_text()) == {"version": 1, "servers": {}}


def test_two_stores_on_one_file_see_each_others_records(path: Path) -> None:
    first, second = FileTokenStore(path), FileTokenStore(path)
    first.save(SERVER, record())
    second.save(OTHER, record("client-2"))
    assert first.load(OTHER) == record("client-2")
    assert second.load(SERVER) == record()
    second.forget(SERVER)
    assert first.load(SERVER) is None


def test_two_stores_writing_at_once_lose_nothing(path: Path) -> None:
    stores = [FileTokenStore(path), FileTokenStore(path)]
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            for n in range(25):
                stores[index].save(f"https://s{index}-{n}.example.com", record(f"c{index}-{n}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    servers = json.loads(path.read_text())["servers"]
    assert len(servers) == 50


CORRUPT = [
    (b"{not json", "is not valid JSON"),
    (b"", "is not valid JSON"),
    (b"\xff\xfe\x00garbage", "is not valid JSON"),
    (b"[1, 2]", "is not a token file (not a JSON object)"),
    (b'{"servers": {}}', "is not a token file"),
    (b'{"version": true, "servers": {}}', "is not a token file"),
    (b'{"version": "1", "servers": {}}', "is not a token file"),
    (b'{"version": 1, "servers": []}', "is not a token file"),
    (b'{"version": 2, "servers": {}}', "was written by a newer mcp-client (format 2"),
]


@pytest.mark.parametrize(("content", "problem"), CORRUPT)
def test_a_corrupt_file_is_a_clear_error_for_every_call(
    path: Path, content: bytes, problem: str
) -> None:
    path.parent.mkdir()
    path.write_bytes(content)
    path.chmod(0o600)
    store = FileTokenStore(path)
    for call in (
        lambda: store.load(SERVER),
        lambda: store.save(SERVER, record()),
        lambda: store.forget(SERVER),
    ):
        with pytest.raises(TokenStoreError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"token file {path}: {problem}")
        assert "delete it" in message
        assert "Traceback" not in message and "Expecting" not in message
        assert isinstance(caught.value, McpError)
        no_secret_in(caught.value)
    assert path.read_bytes() == content  # nothing was overwritten


def test_a_bad_record_names_the_server_and_field_never_the_value(path: Path) -> None:
    store = FileTokenStore(path)
    store.save(OTHER, record("client-2"))
    document = json.loads(path.read_text())
    bad = record().to_json()
    bad["refresh_token"] = [SECRETS[2]]
    document["servers"]["https://user:s3cr3t-access-token@mcp.example.com/mcp?k=v"] = bad
    path.write_text(json.dumps(document))
    server = "https://user:s3cr3t-access-token@mcp.example.com/mcp?k=v"
    with pytest.raises(TokenStoreError) as caught:
        store.load(server)
    message = str(caught.value)
    assert "'refresh_token' must be a string or null" in message
    assert "mcp.example.com/mcp" in message
    assert "mcp-client logout" in message
    assert "user:" not in message and "k=v" not in message
    no_secret_in(caught.value)
    assert store.load(OTHER) == record("client-2")  # the other records still load
    store.forget(server)  # logout clears the bad record
    assert store.load(server) is None
    assert store.load(OTHER) == record("client-2")


def test_a_path_that_is_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenStoreError, match=r"cannot be read \(\[Errno 21\]") as caught:
        FileTokenStore(tmp_path).load(SERVER)
    assert str(tmp_path) in str(caught.value)


def test_a_fifo_in_the_files_place_is_refused_not_waited_on(path: Path) -> None:
    path.parent.mkdir()
    os.mkfifo(path, 0o644)
    with pytest.raises(TokenStoreError, match="is not a regular file") as caught:
        FileTokenStore(path).load(SERVER)
    assert str(path) in str(caught.value)
    assert mode(path) == 0o644  # not chmod-ed: it is not ours to tighten


def test_an_unreadable_file_is_a_clear_error(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FileTokenStore(path).save(SERVER, record())
    real_open = os.open

    def denied(file: object, *args: int) -> int:
        if file == path:
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(TokenStoreError, match=r"cannot be read \(\[Errno 13\] Permission denied"):
        FileTokenStore(path).load(SERVER)


def test_save_takes_a_record_only(path: Path) -> None:
    with pytest.raises(TypeError, match="StoredAuthorization"):
        FileTokenStore(path).save(SERVER, record().to_json())  # type: ignore[arg-type]
    assert not path.parent.exists()


def test_the_default_path_is_in_the_user_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    expected = Path(platformdirs.user_data_dir("mcp-sansio-client", appauthor=False))
    assert default_token_path() == expected / "tokens.json"
    store = FileTokenStore()
    assert store.path == expected / "tokens.json"
    if sys.platform.startswith("linux"):
        assert store.path == tmp_path / "xdg" / "mcp-sansio-client" / "tokens.json"
        store.save(SERVER, record())
        assert mode(store.path.parent) == 0o700
    assert repr(store) == f"FileTokenStore(path={str(store.path)!r})"


# --- symbolic links are never followed --------------------------------------------------------

CALLS = ["load", "save", "forget"]


def use(store: FileTokenStore, name: str) -> None:
    if name == "load":
        store.load(SERVER)
    elif name == "save":
        store.save(SERVER, record("client-2"))
    else:
        store.forget(SERVER)


def snapshot(path: Path) -> tuple[int, bytes, int]:
    """A file's mode, content and modification time, read without following a link."""
    status = os.lstat(path)
    return stat.S_IMODE(status.st_mode), path.read_bytes(), status.st_mtime_ns


def victim(directory: Path, content: bytes, mode: int = 0o644) -> Path:
    """A file a link in the store's place points at: someone else's, readable by all."""
    directory.mkdir(exist_ok=True)
    target = directory / "elsewhere.json"
    target.write_bytes(content)
    target.chmod(mode)
    return target


@pytest.mark.parametrize("name", CALLS)
def test_a_token_file_that_is_a_symlink_is_refused_and_its_target_untouched(
    path: Path, tmp_path: Path, name: str
) -> None:
    """A link to a valid token file with mode 0644: once the store read it and chmod-ed the
    target to 0600; now nothing is read, written or chmod-ed."""
    document = {"version": 1, "servers": {SERVER: record().to_json()}}
    target = victim(tmp_path / "other", json.dumps(document).encode())
    before = snapshot(target)
    path.parent.mkdir()
    path.symlink_to(target)
    store = FileTokenStore(path)
    with pytest.raises(TokenStoreError) as caught:
        use(store, name)
    message = str(caught.value)
    assert message.startswith(f"token file {path}: is a symbolic link")
    assert "never follows" in message and "real file's path" in message
    assert caught.value.path == path
    no_secret_in(caught.value)
    assert snapshot(target) == before  # mode 0644 and content as they were
    assert path.is_symlink() and os.readlink(path) == str(target)  # not replaced either


@pytest.mark.parametrize("name", CALLS)
def test_a_dangling_token_file_symlink_is_refused_and_nothing_created(
    path: Path, tmp_path: Path, name: str
) -> None:
    target = tmp_path / "other" / "planted.json"
    target.parent.mkdir()
    path.parent.mkdir()
    path.symlink_to(target)
    with pytest.raises(TokenStoreError, match="is a symbolic link"):
        use(FileTokenStore(path), name)
    assert not target.exists()
    assert path.is_symlink()


@pytest.mark.parametrize("name", ["save", "forget"])
def test_a_lock_file_that_is_a_symlink_is_refused_and_its_target_untouched(
    path: Path, tmp_path: Path, name: str
) -> None:
    store = FileTokenStore(path)
    store.save(SERVER, record())
    tokens = snapshot(path)
    target = victim(tmp_path / "other", b"someone else's file\n")
    before = snapshot(target)
    lock = path.with_name("tokens.json.lock")
    lock.unlink()
    lock.symlink_to(target)
    with pytest.raises(TokenStoreError) as caught:
        use(store, name)
    message = str(caught.value)
    assert message.startswith(f"token file {path}: has a lock file {lock} that is a symbolic")
    assert "remove the link" in message
    no_secret_in(caught.value)
    assert snapshot(target) == before
    assert snapshot(path) == tokens  # the token file is not written without its lock
    assert store.load(SERVER) == record()  # reading takes no lock


@pytest.mark.parametrize("name", ["save", "forget"])
def test_a_dangling_lock_symlink_creates_nothing_where_it_points(
    path: Path, tmp_path: Path, name: str
) -> None:
    """Opening a lock with O_CREAT through a dangling link would create its target."""
    path.parent.mkdir()
    target = tmp_path / "other" / "created-by-the-store"
    target.parent.mkdir()
    lock = path.with_name("tokens.json.lock")
    lock.symlink_to(target)
    with pytest.raises(TokenStoreError, match=r"lock file .* is a symbolic link"):
        use(FileTokenStore(path), name)
    assert not target.exists()
    assert not path.exists()


def test_a_lock_file_that_is_not_a_regular_file_is_refused(path: Path) -> None:
    path.parent.mkdir()
    lock = path.with_name("tokens.json.lock")
    os.mkfifo(lock, 0o644)
    with pytest.raises(TokenStoreError, match=r"lock file .* is not a regular file"):
        FileTokenStore(path).save(SERVER, record())
    assert mode(lock) == 0o644 and not path.exists()


def test_a_symlinked_directory_above_the_file_is_followed(tmp_path: Path) -> None:
    """Only the file's own name is checked: a data directory that is a link (dotfiles kept
    elsewhere) still works."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    store = FileTokenStore(tmp_path / "linked" / "tokens.json")
    store.save(SERVER, record())
    assert store.load(SERVER) == record()
    assert mode(real / "tokens.json") == 0o600


def test_a_loose_file_of_another_user_is_refused_not_chmod_ed(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store tightens only a file it owns: as root it could chmod anyone's."""
    store = FileTokenStore(path)
    store.save(SERVER, record())
    path.chmod(0o644)
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)  # the file is someone else's
    with pytest.raises(TokenStoreError) as caught:
        store.load(SERVER)
    message = str(caught.value)
    assert "mode 0644" in message and f"another user (uid {owner})" in message
    assert str(path) in message
    no_secret_in(caught.value)
    assert mode(path) == 0o644


def test_a_private_file_of_another_user_is_read_as_it_is(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileTokenStore(path)
    store.save(SERVER, record())
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    assert store.load(SERVER) == record()
    assert mode(path) == 0o600


def test_a_new_directory_is_made_private_without_following_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 0700 is set through a descriptor of the directory the store just made; one that
    appeared meanwhile (another store's, or a link) is not chmod-ed."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o755)
    directory = tmp_path / "data"
    real_mkdir = os.mkdir

    def raced(target: str | os.PathLike[str], mode: int = 0o777) -> None:
        if Path(target) == directory:  # a link appears first
            directory.symlink_to(elsewhere, target_is_directory=True)
            raise FileExistsError(17, "File exists")
        real_mkdir(target, mode)

    monkeypatch.setattr(os, "mkdir", raced)
    FileTokenStore(directory / "tokens.json").save(SERVER, record())
    assert mode(elsewhere) == 0o755  # the linked directory was not chmod-ed to 0700
    assert mode(elsewhere / "tokens.json") == 0o600


def test_a_forked_child_gets_a_store_lock_no_parent_thread_holds() -> None:
    """A parent's thread saving tokens at the moment of a fork holds the store lock in the
    child too, where that thread does not exist: the child's clients would wait forever."""
    from _mcp_io import oauth

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with oauth._STORE_LOCK:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(30)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether the lock can be taken, then leave at once
        os.write(write, b"1" if oauth._STORE_LOCK.acquire(timeout=10) else b"0")
        os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 1) == b"1"
    finally:
        release.set()
        holder.join()
        os.close(read)
        os.waitpid(pid, 0)
