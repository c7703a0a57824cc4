"""What this machine has, what the project needs of it, and what the set-up installs:
packages.py (setup/packages.txt, the one list), probe.py (finding a tool and its
version), toolchains.py (each server's declared toolchain: available or why not),
plan.py (the packages a set-up installs; run by scripts/install_system_deps.sh).

Standard library only, so the set-up script can run it before the virtualenv exists.
"""
