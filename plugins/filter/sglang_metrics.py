# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role sglang_metrics: its variables' problems, and the Prometheus file_sd target of one serving host."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re

from ansible.errors import AnsibleFilterError

# what a host part of an address may be: an IPv4 address or a DNS name (no scheme, path, user or spaces)
_HOST = re.compile(r'^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\Z')
# the bearer token goes into a file the exporter reads: one line of visible characters
_TOKEN = re.compile(r'^[\x21-\x7e]{16,4096}\Z')


def split_listen_address(value):
    """``(host, port)`` of ``host:port``; None when it is not one."""
    if not isinstance(value, str) or value.count(':') != 1:
        return None
    host, port = value.split(':')
    if not _HOST.match(host) or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


def sglang_metrics_problems(v):
    """Every problem of role sglang_metrics' variables (``v``: the variables, and taken_ports, the ports of the host's
    SGLang API or router, or sglang_service_port alone), each naming the variable and what it allows; [] when none."""
    problems = []
    listen = v.get('sglang_metrics_listen_address', '')
    if listen != '':
        address = split_listen_address(listen)
        if address is None:
            problems.append(
                "sglang_metrics_listen_address must be HOST:PORT (an address of the host, and a port from 1 to 65535), or '' to "
                'open no metrics listener; got %s.' % json.dumps(listen)
            )
        elif address[1] in [int(port) for port in v.get('taken_ports') or [v.get('sglang_service_port', 30000)]] + [9100]:
            problems.append(
                'sglang_metrics_listen_address must use a port of its own, not %d (the SGLang API, the router or node-exporter '
                'binds it); got %s.' % (address[1], json.dumps(listen))
            )
        networks = v.get('sglang_metrics_allow_networks')
        if not isinstance(networks, list) or not networks:
            problems.append(
                'sglang_metrics_allow_networks must list the networks (CIDR, e.g. 10.0.5.0/24) that may scrape the metrics '
                'listener that sglang_metrics_listen_address opens; got %s.' % json.dumps(networks)
            )
        else:
            bad = []
            for network in networks:
                try:
                    ipaddress.ip_network(network if isinstance(network, str) else '', strict=True)
                except ValueError:
                    bad.append(network)
            if bad:
                problems.append(
                    'sglang_metrics_allow_networks must hold networks in CIDR form with no host bits set (10.0.5.0/24, '
                    '192.0.2.7/32); got %s.' % ', '.join(json.dumps(network) for network in bad)
                )
    token = v.get('sglang_metrics_bearer_token', '')
    if token != '' and not (isinstance(token, str) and _TOKEN.match(token)):
        # the value itself is never shown: it is a secret
        problems.append(
            "sglang_metrics_bearer_token must be '' or 16 to 4096 visible ASCII characters without spaces (it goes on one "
            'line of a root-owned file); the value given is not (not shown: it is a secret).'
        )
    for name in ('sglang_metrics_file_sd_dir',):
        value = v.get(name)
        if not (isinstance(value, str) and re.match(r'^/[^\n]*\Z', value)):
            problems.append('%s must be an absolute path; got %s.' % (name, json.dumps(value)))
    group = v.get('sglang_metrics_prometheus_group')
    if not (isinstance(group, str) and group):
        problems.append('sglang_metrics_prometheus_group must name an inventory group (the Prometheus hosts); got %s.' % json.dumps(group))
    return problems


def sglang_metrics_target(host):
    """The file_sd document of one serving host (docs/observability.md). ``host``: hostname, group_names, listen
    (HOST:PORT of the metrics listener), service (the service's name), unit_content (the unit file's text, or ''
    without one). The labels say which release and unit the host runs, read from the unit itself (a rollback's
    restored unit names its own release), so a deploy shows as a label change."""
    gpu_groups = sorted(group for group in host.get('group_names', []) if group.startswith('gpu_'))
    content = host.get('unit_content') or ''
    # a line continued with a backslash is one line to systemd
    exec_start = next((line for line in content.replace('\\\n', ' ').splitlines() if line.startswith('ExecStart=')), '')
    algorithm = re.search(r'--speculative-algorithm[= ]+"?([A-Za-z0-9_-]+)', exec_start)
    # an ml-env release's interpreter: <ml_env_root>/releases/<id>/bin/python
    release = re.search(r'^ExecStart="?/\S*/releases/([A-Za-z0-9._-]+)/bin/', exec_start)
    if split_listen_address(host.get('listen', '')) is None:
        raise AnsibleFilterError('sglang_metrics_target: listen must be HOST:PORT, got %r' % (host.get('listen'),))

    return [
        {
            'targets': [host['listen']],
            'labels': {
                'host': host['hostname'],
                'gpu_group': gpu_groups[0] if gpu_groups else 'none',
                'unit': host['service'] + '.service',
                'release': release.group(1) if release else 'none',
                'speculative_algorithm': algorithm.group(1) if algorithm else 'none',
                'unit_sha256': hashlib.sha256(content.encode('utf-8')).hexdigest() if content else 'none',
                # exporter-exporter's module of this service (the scrape job of node-exporter sets its own)
                '__param_module': 'sglang_' + host['service'],
            },
        }
    ]


# the jobs the role writes itself; another job of the same name would make Prometheus refuse the configuration
OWN_JOBS = ('ddtree-sglang', 'ddtree-sglang-node', 'ddtree-sglang-router')


def prometheus_scrape_problems(v):
    """Every problem of role prometheus_scrape's variables (``v``), each naming the variable and what it allows."""
    problems = []
    for name in ('prometheus_scrape_config_path', 'prometheus_scrape_file_sd_dir'):
        value = v.get(name)
        if not (isinstance(value, str) and re.match(r'^/[^\n]*\Z', value)):
            problems.append('%s must be an absolute path; got %s.' % (name, json.dumps(value)))
    for name in ('prometheus_scrape_interval_s', 'prometheus_scrape_evaluation_interval_s'):
        value = v.get(name)
        # -e gives strings: the argument spec takes "15" as 15, and so does this check
        value = int(value) if isinstance(value, str) and value.isdigit() else value
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 3600:
            problems.append('%s must be whole seconds from 1 to 3600; got %s.' % (name, json.dumps(value)))
    token = v.get('prometheus_scrape_bearer_token', '')
    if token != '' and not (isinstance(token, str) and _TOKEN.match(token)):
        problems.append(
            "prometheus_scrape_bearer_token must be '' or 16 to 4096 visible ASCII characters without spaces, the "
            'sglang_metrics_bearer_token of the serving hosts; the value given is not (not shown: it is a secret).'
        )
    managers = v.get('prometheus_scrape_alertmanagers')
    if not isinstance(managers, list) or any(split_listen_address(manager) is None for manager in managers):
        problems.append('prometheus_scrape_alertmanagers must list Alertmanagers as HOST:PORT; got %s.' % json.dumps(managers))
    jobs = v.get('prometheus_scrape_other_jobs')
    if not isinstance(jobs, list) or not all(isinstance(job, dict) and isinstance(job.get('job_name'), str) and job['job_name'] for job in jobs):
        problems.append('prometheus_scrape_other_jobs must list scrape configurations, each a dict with a job_name; got %s.' % json.dumps(jobs))
    else:
        taken = sorted(set(job['job_name'] for job in jobs) & set(OWN_JOBS))
        if taken:
            problems.append(
                'prometheus_scrape_other_jobs must not name the jobs the role writes itself (%s); got %s.' % (', '.join(OWN_JOBS), ', '.join(taken))
            )
    return problems


class FilterModule(object):
    def filters(self):
        return {
            'sglang_metrics_problems': sglang_metrics_problems,
            'sglang_metrics_target': sglang_metrics_target,
            'prometheus_scrape_problems': prometheus_scrape_problems,
        }
