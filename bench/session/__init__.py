"""One session for every command that starts something (run, verify, serve, calibrate,
build): hosts -> preflight -> databases -> builds -> teardown, written once in
bench.session.session. It sits beside the runner, above infra and load: it opens the
hosts, checks them (bench.session.preflight, which needs the load generators' install
hints), starts the databases and builds the servers on them."""
from bench.session.preflight import FOR_BUILD, FOR_RUN, FOR_SERVE, FOR_VERIFY, Needs, \
    PreflightError
from bench.session.session import BuildOutcome, Console, Session, check_proxies, \
    proxies_unavailable, server_address, servers_unavailable

__all__ = ["BuildOutcome", "Console", "FOR_BUILD", "FOR_RUN", "FOR_SERVE", "FOR_VERIFY",
           "Needs", "PreflightError", "Session", "check_proxies", "proxies_unavailable",
           "server_address", "servers_unavailable"]
