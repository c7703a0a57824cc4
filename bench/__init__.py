"""webbench: the orchestrator. One concern per sub-package:

core/      the vocabulary: settings as asked (frozen) and presets, the narrow values derived
           from them and what a run resolves beside them (context.py), the server
           manifests, the plan of cases
infra/     hosts, processes, databases: everything that starts a process or reads a resource
load/      load generators (wrk, oha)
verify/    the contract check, statements per request
analysis/  pure functions of stored figures: per-sample verdicts, per-case statistics
storage/   the results document: its typed records and their transitions, schema
           versions, migrations, atomic saves
report/    the table model, built once; each format only changes syntax
session/   the one sequence of every command that starts something: hosts -> preflight ->
           databases -> builds -> teardown
cli/       thin commands: run, list, build, serve, verify, calibrate, compare, report
runner.py  one run in a session: the interleaved schedule of samples

Imports point one way: cli -> runner -> session -> report/load/verify/analysis -> infra ->
core/storage. The session sits beside the runner, above infra and load (its preflight
names the load generators' install hints); core, storage and analysis import nothing from
infra, session, runner or cli.
"""
