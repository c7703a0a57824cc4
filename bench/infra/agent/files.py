"""Files and folders on this host: what the throwaway databases create, write, read back
and remove where they run. Paths are this host's; every function answers in JSON types."""
from __future__ import annotations

import os
import pwd
import shutil
import tempfile


def euid() -> int:
    return os.geteuid()


def make_temp_folder(prefix: str) -> str:
    """A new folder in the host's temp folder that every user may enter (as root, the
    postgres and mysql users must reach their data folders inside it)."""
    path = tempfile.mkdtemp(prefix=prefix)
    os.chmod(path, 0o755)
    return path


def make_folder(path: str, owner: str | None) -> None:
    """A new folder (an existing one is an error), owned by `owner` when given."""
    os.mkdir(path)
    if owner:
        pw = pwd.getpwnam(owner)
        os.chown(path, pw.pw_uid, pw.pw_gid)


def write_file(path: str, text: str, mode: int) -> None:
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def append(path: str, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def tail_file(path: str, chars: int) -> str | None:
    """The file's last `chars` characters, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4 * chars))
            return f.read().decode("utf-8", "replace")[-chars:]
    except OSError:
        return None


def remove(paths: list[str]) -> list[str]:
    """Delete files and folders (gone ones are fine); returns those still there."""
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    return [p for p in paths if os.path.lexists(p)]


def expand(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else path


def sizes(paths: list[str]) -> dict:
    """{path: bytes} of each file or folder (everything below it, symbolic links not
    followed, a file linked several times counted once: what the program's files take,
    apparent sizes), None for a path that does not exist."""
    out: dict = {}
    for path in paths:
        if not os.path.lexists(path):
            out[path] = None
            continue
        seen, total = set(), 0
        walk = [(path, [], [""])] if not os.path.isdir(path) or os.path.islink(path) \
            else os.walk(path)
        for root, _, names in walk:
            for name in names:
                try:
                    st = os.lstat(os.path.join(root, name) if name else root)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
        out[path] = total
    return out
