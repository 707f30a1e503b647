# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the roles need on a host besides Python, and the packages that bring it (controller side, pure functions):
one table for ml_env (a release build) and sglang_service (the unit), so a refusal names the same packages
everywhere and ml_env_install_prerequisites installs them."""

from __future__ import annotations

# command (or need) -> (why a role needs it, Debian/Ubuntu package, RHEL-family package)
PREREQUISITES = {
    'venv': (
        'every release is a venv made with pip (ensurepip)',
        'python3-venv',  # python3.X-venv for another python3.X
        'python3',  # python3-libs brings ensurepip's wheels (python3-pip-wheel)
    ),
    'patch': ('sglang_install applies the patch series (sglang_install_patches) with it', 'patch', 'patch'),
    'git': ('sglang_install checks out the fork (sglang_install_fork) with it', 'git', 'git-core'),
    'systemctl': ('the service is a systemd unit', 'systemd', 'systemd'),
    'journalctl': ("the verdict reads the service's journal", 'systemd', 'systemd'),
}
FAMILIES = {'Debian': 1, 'RedHat': 2}


def packages_text(need):
    """'the package X (Debian/Ubuntu; Y on RHEL-family hosts)'."""
    _why, debian, rhel = PREREQUISITES[need]
    if debian == rhel:
        return 'the package %s (Debian/Ubuntu and RHEL family)' % debian
    return 'the package %s on Debian/Ubuntu, %s on the RHEL family' % (debian, rhel)


def missing_commands(host, commands):
    """The commands of ``commands`` that sglang_host_facts' ``host`` did not find (its ``commands`` map)."""
    found = host.get('commands') or {}
    return [command for command in commands if not found.get(command)]


def command_problems(host, hostname, commands, variable='ml_env_install_prerequisites'):
    """A message per command missing on the host: what needs it, the package for each family, and ``variable``, the
    switch that installs it (None where no role installs it: systemd is the host's init, not a package to add)."""
    install = ', or set %s: true to have it installed' % variable if variable else ' (a host that boots with systemd has it)'
    return [
        '%s is not on %s: %s. Install %s%s.' % (command, hostname, PREREQUISITES[command][0], packages_text(command), install)
        for command in missing_commands(host, commands)
    ]


def prerequisite_packages(needs, os_family):
    """The packages that bring ``needs`` (names of PREREQUISITES) on a host of ``os_family`` (Ansible's fact), once each;
    [] for a family without a known name."""
    column = FAMILIES.get(os_family)
    if column is None:
        return []
    packages = []
    for need in needs:
        package = PREREQUISITES[need][column]
        if package not in packages:
            packages.append(package)
    return packages
