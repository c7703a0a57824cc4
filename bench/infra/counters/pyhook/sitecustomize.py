"""Loaded by a Python server's own interpreter when a count asks where its work went
(bench/infra/counters/python_profile.py puts this folder first on PYTHONPATH and names a
folder in BENCH_PYCOUNT_DIR). Standard library only: it runs in the server's virtualenv.

It counts the bytecodes each Python function executes itself (sys.settrace with
f_trace_opcodes, the interpreter's own hook for it): a deterministic figure in the
language's own names, where callgrind sees only the interpreter's C functions
(_PyEval_EvalFrameDefault). Two real-time signals drive it, as callgrind's zero and dump:

    SIGRTMIN+5   zero the counts and start counting (then writes zeroed.<pid>.<k>)
    SIGRTMIN+6   stop counting and write the counts to BENCH_PYCOUNT_DIR/py.<pid>.<k>.json

Until the first SIGRTMIN+5 the tracer only sees calls and returns None (no line or
opcode events), so the server starts at close to its normal speed. Every process that
loads this file writes BENCH_PYCOUNT_DIR/ready.<pid> with its interpreter, so the harness
signals only processes that installed the handlers (a real-time signal's default action
is to end the process).
"""
import os
import sys

_DIR = os.environ.get("BENCH_PYCOUNT_DIR")


def _install(folder):
    import json
    import signal
    import threading

    counts = {}
    state = {"on": False, "dumps": 0}

    def opcode_tracer(frame, event, arg):
        if not state["on"]:                   # counting stopped: this frame no more
            frame.f_trace_opcodes = False
            return None
        if event == "opcode":
            code = frame.f_code
            counts[code] = counts.get(code, 0) + 1
        return opcode_tracer

    def trace_running_frames():
        # frames already running when counting starts (a server's accept loop, a
        # thread's run()) get no "call" event until they return: traced from here on
        for top in sys._current_frames().values():
            frame = top
            while frame is not None:
                if frame.f_code.co_filename != __file__:
                    frame.f_trace = opcode_tracer
                    frame.f_trace_opcodes = True
                    frame.f_trace_lines = False
                frame = frame.f_back

    def tracer(frame, event, arg):
        # a new or resumed frame (a coroutine's every resumption is a "call"); this
        # file's own (the signal handlers) are never the server's work
        if not state["on"] or frame.f_code.co_filename == __file__:
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return opcode_tracer

    def name(code, module):
        qualname = getattr(code, "co_qualname", code.co_name)
        if module in ("__main__", "__mp_main__"):   # the script: named as its file is
            module = os.path.splitext(os.path.basename(code.co_filename))[0]
        return f"{module}.{qualname}" if module else qualname

    modules = {}

    def zero(signum, frame):
        state["zeroed"] = state.get("zeroed", 0) + 1
        # the harness waits for this before it sends the counted requests; written
        # before counting starts, so that its own calls are not counted
        with open(os.path.join(folder, f"zeroed.{os.getpid()}.{state['zeroed']}"), "w"):
            pass
        counts.clear()
        state["on"] = True
        trace_running_frames()

    def dump(signum, frame):
        state["on"] = False
        state["dumps"] += 1
        out = {}
        for code, n in list(counts.items()):
            # no line number: code added above a function must not rename it
            key = f"{name(code, _module_of(code))} ({os.path.basename(code.co_filename)})"
            out[key] = out.get(key, 0) + n
        path = os.path.join(folder, f"py.{os.getpid()}.{state['dumps']}.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"pid": os.getpid(), "bytecodes": out}, f)
        os.replace(path + ".tmp", path)

    def _module_of(code):
        found = modules.get(code.co_filename)
        if found is None:
            found = ""
            for mod in list(sys.modules.values()):
                if getattr(mod, "__file__", None) == code.co_filename:
                    found = mod.__name__
                    break
            modules[code.co_filename] = found
        return found

    signal.signal(signal.SIGRTMIN + 5, zero)
    signal.signal(signal.SIGRTMIN + 6, dump)
    sys.settrace(tracer)
    threading.settrace(tracer)
    def ready():
        # the interpreter: a process that exec'd another program since (a launcher)
        # keeps its pid, not this, and must not be signalled
        with open(os.path.join(folder, f"ready.{os.getpid()}"), "w") as f:
            f.write(sys.executable)

    ready()

    def after_fork():
        # a forked worker (gunicorn's) keeps the handlers and the tracer; it says so
        counts.clear()
        ready()

    os.register_at_fork(after_in_child=after_fork)


if _DIR:
    try:
        _install(_DIR)
    except Exception as exc:  # noqa: BLE001 - never the reason a server does not start
        sys.stderr.write(f"webbench pyhook: not installed: {exc!r}\n")
