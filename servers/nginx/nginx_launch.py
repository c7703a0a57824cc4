"""Render an nginx config template and exec nginx in the foreground.

nginx's config cannot read environment variables, so each nginx role (the ceiling server
in this folder, the reverse proxy in proxies/nginx/) has a small start script that turns
its BENCH_* environment into values, and this module does the rest: a private prefix
directory for everything nginx writes, the template rendered into it, and
`exec nginx -p <prefix> -c <conf> -g 'daemon off;'`.

exec, not a child: the process the harness started *is* the nginx master, so its process
group signal reaches the master and every worker, and no Python process sits in the
server's resource figures. Standard library only (it runs before any virtualenv matters).
"""
from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
INSTALL_HINT = "install it with `apt-get install nginx-light` (Debian/Ubuntu)"


class LaunchError(RuntimeError):
    """A setting nginx cannot be given; the message says which and why."""


def env(name: str) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        raise LaunchError(f"{name} is not set (the harness sets it for every start)")
    return value


def env_int(name: str, low: int = 1, high: int = 65535) -> int:
    text = env(name)
    if not text.isdigit() or not low <= int(text) <= high:
        raise LaunchError(f"{name}={text!r} must be a whole number from {low} to {high}")
    return int(text)


def quoted(text: str) -> str:
    """`text` as one double-quoted nginx config token that a directive which evaluates
    variables (return, if, map values) reproduces byte for byte.

    The config parser turns \\" and \\\\ back into " and \\. `$` has no escape in nginx's
    complex values, so each one is written as ${dollar}, a variable that the templates
    define with `geo $dollar { default "$"; }` (evaluated only where it is used). Control
    characters never come from the harness (its token has no whitespace) and are refused."""
    if any(ord(c) < 0x20 or c == "\x7f" for c in text):
        raise LaunchError(f"{text!r} contains a control character nginx's config cannot carry")
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "${dollar}")
    return f'"{escaped}"'


def listen_address(host: str, port: int) -> str:
    """host:port as nginx's `listen` takes it (an IPv6 address in brackets)."""
    if not re.fullmatch(r"[0-9A-Za-z.:\-]+", host):
        raise LaunchError(f"host {host!r} is not an address or host name nginx can listen on")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def user_directive() -> str:
    """As root, nginx would switch its workers to `nobody`, which could not enter the
    private (0700) prefix and would not run as every other server does (as the harness's
    user). Naming the current user keeps the workers as they are; as any other user the
    directive would only draw a warning, so it is left out."""
    if os.geteuid() != 0:
        return "# not root: the workers run as the harness's user without a `user` directive"
    user = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid()).gr_name
    return f"user {user} {group};  # the harness's user, as every other server runs"


def private_prefix(role: str, port: int) -> Path:
    """An empty directory only this user can enter, for everything nginx writes (the
    rendered config, the pid file, the temp paths); nothing goes elsewhere.

    One per role and port, emptied at each start: a stopped nginx leaves at most one
    small folder per port behind instead of one per start (two nginx processes cannot
    share a port, so they never share a folder). It sits in a 0700 parent owned by this
    user, checked, so another user of /tmp cannot plant or read anything in it."""
    parent = Path(tempfile.gettempdir()) / f"webbench-nginx-{os.geteuid()}"
    try:
        parent.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise LaunchError(f"{parent} must be a directory owned by uid {os.geteuid()} with mode "
                          f"0700 (it holds nginx's config and pid file); remove it and retry")
    prefix = parent / f"{role}-{port}"
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(mode=0o700)
    return prefix


def render(template: str, values: dict[str, str]) -> str:
    """Fill {{name}} placeholders (nginx's own syntax uses $ and single braces); an
    unknown or unfilled one is an error, never a config with a hole in it."""
    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in values:
            raise LaunchError(f"template placeholder {{{{{name}}}}} has no value; "
                              f"known: {sorted(values)}")
        return str(values[name])
    return PLACEHOLDER.sub(fill, template)


def nginx_binary() -> str:
    """BENCH_NGINX if set, else nginx on PATH, else Debian's /usr/sbin/nginx (not on a
    normal user's PATH)."""
    for candidate in (os.environ.get("BENCH_NGINX"), shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise LaunchError(f"nginx is not installed: {INSTALL_HINT}")


def exec_nginx(role: str, template_path: Path, port: int, values: dict[str, str]) -> None:
    """Render `template_path` into a private prefix and replace this process with the
    nginx master (never returns). Common values every template may use: {{prefix}},
    {{user_directive}}."""
    prefix = private_prefix(role, port)
    conf = prefix / "nginx.conf"
    all_values = {"prefix": str(prefix), "user_directive": user_directive(), **values}
    conf.write_text(render(template_path.read_text(), all_values))
    binary = nginx_binary()
    # -e stderr: errors found before the config is read also go to the harness's log
    # (Debian's build defaults to stderr already; other builds default to a file).
    # daemon off: the master stays in the foreground as the process the harness started.
    argv = [binary, "-p", f"{prefix}/", "-e", "stderr", "-c", str(conf), "-g", "daemon off;"]
    print(f"{role}: {' '.join(argv)}", file=sys.stderr, flush=True)
    os.execv(binary, argv)


def main(run) -> None:
    """Run a start script's `run()`; a LaunchError is one clear line and exit status 2."""
    try:
        run()
    except LaunchError as exc:
        print(f"nginx start: {exc}", file=sys.stderr)
        sys.exit(2)
