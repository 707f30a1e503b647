# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role sglang_metrics' checks and target, role prometheus_scrape's checks: exact messages and labels."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.sglang_metrics import (
    prometheus_scrape_problems,
    sglang_metrics_problems,
    sglang_metrics_target,
)

METRICS = {
    'sglang_metrics_listen_address': '',
    'sglang_metrics_allow_networks': [],
    'sglang_metrics_bearer_token': '',
    'sglang_metrics_file_sd_dir': '/etc/prometheus/file_sd/ddtree-sglang',
    'sglang_metrics_prometheus_group': 'prometheus',
    'sglang_service_port': 30000,
}
OPEN = dict(METRICS, sglang_metrics_listen_address='10.88.0.5:9999', sglang_metrics_allow_networks=['10.88.0.0/16'])

UNIT = """[Service]
User=sglang
ExecStart=/opt/ddtree/ml-env/releases/3f2a9c1e0b7d4a55/bin/python -m sglang.launch_server --model-path /srv/models/q \\
 --speculative-algorithm DDTREE --port 30000
"""


def test_the_defaults_and_an_open_listener_pass():
    assert sglang_metrics_problems(METRICS) == []
    assert sglang_metrics_problems(dict(OPEN, sglang_metrics_bearer_token='s3cret-token-0123456789')) == []


def test_a_listener_needs_its_networks():
    assert sglang_metrics_problems(dict(OPEN, sglang_metrics_allow_networks=[])) == [
        'sglang_metrics_allow_networks must list the networks (CIDR, e.g. 10.0.5.0/24) that may scrape the metrics listener that '
        'sglang_metrics_listen_address opens; got [].'
    ]
    assert sglang_metrics_problems(dict(OPEN, sglang_metrics_allow_networks=['10.88.0.1/16', 'any'])) == [
        'sglang_metrics_allow_networks must hold networks in CIDR form with no host bits set (10.0.5.0/24, 192.0.2.7/32); got "10.88.0.1/16", "any".'
    ]


@pytest.mark.parametrize('listen', ['10.88.0.5', 'http://10.88.0.5:9999', '10.88.0.5:99999', ':9999', '10.88.0.5:9999/generate'])
def test_a_listen_address_is_host_and_port(listen):
    assert sglang_metrics_problems(dict(OPEN, sglang_metrics_listen_address=listen)) == [
        "sglang_metrics_listen_address must be HOST:PORT (an address of the host, and a port from 1 to 65535), or '' to open no "
        'metrics listener; got "%s".' % listen
    ]


def test_the_listener_never_takes_the_api_port():
    assert sglang_metrics_problems(dict(OPEN, sglang_metrics_listen_address='10.88.0.5:30000')) == [
        'sglang_metrics_listen_address must use a port of its own, not 30000 (the SGLang API, the router or node-exporter binds it); got "10.88.0.5:30000".'
    ]


def test_a_router_host_keeps_the_router_ports():
    router = dict(OPEN, sglang_metrics_listen_address='10.88.0.5:29000', taken_ports=[30080, 29000])
    assert sglang_metrics_problems(router) == [
        'sglang_metrics_listen_address must use a port of its own, not 29000 (the SGLang API, the router or node-exporter binds it); got "10.88.0.5:29000".'
    ]
    assert sglang_metrics_problems(dict(router, sglang_metrics_listen_address='10.88.0.5:30000')) == []


def test_a_bad_token_is_refused_without_being_shown():
    problems = sglang_metrics_problems(dict(OPEN, sglang_metrics_bearer_token='short secret'))
    assert problems == [
        "sglang_metrics_bearer_token must be '' or 16 to 4096 visible ASCII characters without spaces (it goes on one line of a "
        'root-owned file); the value given is not (not shown: it is a secret).'
    ]
    assert 'short secret' not in problems[0]


def test_the_target_is_labelled_with_what_the_unit_runs():
    target = sglang_metrics_target(
        {'hostname': 'ct129', 'group_names': ['lab', 'gpu_a6000_tp2', 'sglang_servers'], 'listen': '10.88.0.5:9999', 'service': 'sglang', 'unit_content': UNIT}
    )
    assert target == [
        {
            'targets': ['10.88.0.5:9999'],
            'labels': {
                'host': 'ct129',
                'gpu_group': 'gpu_a6000_tp2',
                'unit': 'sglang.service',
                'release': '3f2a9c1e0b7d4a55',
                'speculative_algorithm': 'DDTREE',
                'unit_sha256': 'ebc636bb74285c86806e752896062b3aba0f6235bb717e0432c6cb1bd0dc62d5',
                '__param_module': 'sglang_sglang',
            },
        }
    ]


def test_a_host_without_unit_or_release_says_none():
    labels = sglang_metrics_target({'hostname': 'ct7', 'group_names': [], 'listen': 'ct7.lab:9999', 'service': 'sglang', 'unit_content': ''})[0]['labels']
    assert (labels['gpu_group'], labels['release'], labels['speculative_algorithm'], labels['unit_sha256']) == ('none', 'none', 'none', 'none')
    with pytest.raises(AnsibleFilterError, match="listen must be HOST:PORT, got ''"):
        sglang_metrics_target({'hostname': 'ct7', 'listen': '', 'service': 'sglang'})


SCRAPE = {
    'prometheus_scrape_config_path': '/etc/prometheus/prometheus.yml',
    'prometheus_scrape_file_sd_dir': '/etc/prometheus/file_sd/ddtree-sglang',
    'prometheus_scrape_interval_s': 15,
    'prometheus_scrape_evaluation_interval_s': 15,
    'prometheus_scrape_bearer_token': '',
    'prometheus_scrape_alertmanagers': [],
    'prometheus_scrape_other_jobs': [{'job_name': 'prometheus', 'static_configs': [{'targets': ['localhost:9090']}]}],
}


def test_the_scrape_defaults_pass_and_bad_values_are_named():
    assert prometheus_scrape_problems(SCRAPE) == []
    bad = dict(
        SCRAPE,
        prometheus_scrape_interval_s='15s',
        prometheus_scrape_alertmanagers=['http://am:9093'],
        prometheus_scrape_other_jobs=[{'job_name': 'ddtree-sglang-node'}],
        prometheus_scrape_file_sd_dir='file_sd',
    )
    assert prometheus_scrape_problems(bad) == [
        'prometheus_scrape_file_sd_dir must be an absolute path; got "file_sd".',
        'prometheus_scrape_interval_s must be whole seconds from 1 to 3600; got "15s".',
        'prometheus_scrape_alertmanagers must list Alertmanagers as HOST:PORT; got ["http://am:9093"].',
        'prometheus_scrape_other_jobs must not name the jobs the role writes itself (ddtree-sglang, ddtree-sglang-node, ddtree-sglang-router); got '
        'ddtree-sglang-node.',
    ]
