"""webbench: the orchestrator. One concern per sub-package:

core/      the vocabulary: settings as asked (frozen) and presets, the narrow values derived
           from them and what a run resolves beside them (context.py), the server
           manifests, the plan of cases
infra/     hosts, processes, databases: everything that starts a process or reads a resource
load/      load generators behind one protocol (wrk, oha), named only in its registry
verify/    the contract check, statements per request, the rows an update changed
analysis/  pure functions of stored figures: per-sample verdicts, per-case statistics
storage/   the results document: its typed records and their transitions, schema
           versions, migrations, atomic saves
report/    the table model, built once; each format only changes syntax; console lines
session/   the one sequence of every command that starts something: hosts -> preflight ->
           databases -> builds -> teardown
cli/       thin commands: run, list, build, serve, verify, calibrate, compare, report
runner/    one run in a session: the interleaved schedule of samples (run.py), each
           measured into a value (measure.py)

Imports point one way: cli -> runner -> session -> report/load/verify/analysis -> infra ->
core/storage. The session sits beside the runner, above infra and load (its preflight
names the load generators' install hints); core, storage and analysis import nothing from
infra, session, runner or cli.
"""
