"""webbench: the orchestrator. One concern per sub-package:

core/      the vocabulary: settings and presets, the server manifests, the plan of cases
infra/     hosts, processes, databases: everything that starts a process or reads a resource
load/      load generators (wrk)
verify/    the contract check, statements per request
analysis/  pure functions of stored figures: per-sample verdicts, per-case statistics
storage/   the results document: its typed records and their transitions, schema
           versions, migrations, atomic saves
report/    the table model, built once; each format only changes syntax
cli/       thin commands: run, list, build, serve, verify
runner.py  one run: the interleaved schedule of samples
"""
