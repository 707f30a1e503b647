# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.filter.dashboard import dashboard_queries

DASHBOARD = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'prometheus_scrape', 'files', 'ddtree-sglang-dashboard.json')


def _target(ref_id, expr, legend):
    return {'refId': ref_id, 'expr': expr, 'legendFormat': legend, 'datasource': {'type': 'prometheus', 'uid': '${datasource}'}}


def _dashboard(*panels, variables=('gpu_group',)):
    templating = [{'name': 'datasource', 'type': 'datasource', 'query': 'prometheus'}]
    templating += [{'name': name, 'type': 'query', 'query': 'label_values(up, %s)' % name} for name in variables]
    return {'schemaVersion': 39, 'templating': {'list': templating}, 'panels': list(panels)}


def test_each_target_gets_its_variables_and_the_labels_of_its_legend():
    board = _dashboard(
        {
            'title': 'TTFT',
            'targets': [
                _target(
                    'A', 'histogram_quantile(0.99, sum by (le, gpu_group) (rate(x_bucket{gpu_group=~"$gpu_group"}[$__rate_interval])))', 'p99 {{gpu_group}}'
                ),
                _target('B', 'sum by (host, gpu_group) (rate(x_count{gpu_group=~"${gpu_group}"}[$__interval]))', '{{ host }} {{gpu_group}} {{host}}'),
            ],
        }
    )
    assert dashboard_queries(board) == [
        {
            'panel': 'TTFT',
            'ref_id': 'A',
            'expr': 'histogram_quantile(0.99, sum by (le, gpu_group) (rate(x_bucket{gpu_group=~".*"}[1m])))',
            'labels': ['gpu_group'],
        },
        # spaces inside the braces are Grafana's too; a label named twice is listed once
        {'panel': 'TTFT', 'ref_id': 'B', 'expr': 'sum by (host, gpu_group) (rate(x_count{gpu_group=~".*"}[15s]))', 'labels': ['gpu_group', 'host']},
    ]


def test_given_variables_replace_the_defaults_and_formats_take_the_same_value():
    board = _dashboard({'title': 'p', 'targets': [_target('A', 'rate(x{gpu_group=~"${gpu_group:regex}", host="$host"}[$__rate_interval])', '{{host}}')]})
    assert dashboard_queries(board, {'gpu_group': '(gpu_a|gpu_b)', 'host': 'ct129', '__rate_interval': '5m'}) == [
        {'panel': 'p', 'ref_id': 'A', 'expr': 'rate(x{gpu_group=~"(gpu_a|gpu_b)", host="ct129"}[5m])', 'labels': ['host']},
    ]
    assert dashboard_queries(board, {'host': 7})[0]['expr'] == 'rate(x{gpu_group=~".*", host="7"}[1m])'


def test_rows_and_nested_panels_are_walked_in_document_order():
    # an open row is followed by its panels at the top level; a collapsed row keeps them in its own panels
    board = _dashboard(
        {'title': 'Serving', 'type': 'row', 'collapsed': False, 'panels': []},
        {'title': 'one', 'targets': [_target('A', 'up', '{{instance}}')]},
        {'title': 'Deploys', 'type': 'row', 'collapsed': True, 'panels': [{'title': 'two', 'targets': [_target('Z', 'max by (host) (up)', 'host {{host}}')]}]},
        {'title': 'text', 'type': 'text'},
        {'id': 9, 'targets': [_target('A', 'vector(1)', 'constant')]},
    )
    assert dashboard_queries(board) == [
        {'panel': 'one', 'ref_id': 'A', 'expr': 'up', 'labels': ['instance']},
        {'panel': 'two', 'ref_id': 'Z', 'expr': 'max by (host) (up)', 'labels': ['host']},
        # a legend without {{...}} is allowed: the query returns no label the panel needs
        {'panel': 'panel id 9', 'ref_id': 'A', 'expr': 'vector(1)', 'labels': []},
    ]


def test_capture_groups_and_a_regex_anchor_are_not_variables():
    expr = 'label_replace(up{job=~"sglang.*$"}, "port", "$1${2}", "instance", "(.*):(.*)")'
    assert dashboard_queries(_dashboard({'title': 'p', 'targets': [_target('A', expr, '{{port}}')]}))[0]['expr'] == expr


@pytest.mark.parametrize(
    'target, message',
    [
        ({'refId': 'A', 'legendFormat': '{{host}}'}, "panel 'Throughput', target 'A' has no expr"),
        ({'refId': 'A', 'expr': ' ', 'legendFormat': '{{host}}'}, "panel 'Throughput', target 'A' has no expr"),
        ({'refId': 'B', 'expr': 'up'}, "panel 'Throughput', target 'B' has no legendFormat, so its labels are unknown"),
        ({'refId': 'B', 'expr': 'up', 'legendFormat': ''}, "panel 'Throughput', target 'B' has no legendFormat, so its labels are unknown"),
    ],
)
def test_a_target_without_expr_or_legend_is_refused_naming_the_panel(target, message):
    with pytest.raises(AnsibleFilterError) as exc:
        dashboard_queries(_dashboard({'title': 'Throughput', 'targets': [target]}))
    assert str(exc.value) == 'dashboard_queries: ' + message


@pytest.mark.parametrize(
    'expr, left',
    [
        ('up{host="$host"}', '$host'),
        ('up{host="${host:raw}"}', '${host:raw}'),
        ('up{host="[[host]]"}', '[[host]]'),
        # the data source variable is no query variable: in an expr it is a mistake
        ('up{uid="${datasource}"}', '${datasource}'),
    ],
)
def test_a_variable_left_unsubstituted_is_refused(expr, left):
    board = _dashboard({'title': 'Release per host', 'targets': [_target('A', expr, '{{host}}')]})
    with pytest.raises(AnsibleFilterError) as exc:
        dashboard_queries(board)
    assert str(exc.value) == "dashboard_queries: panel 'Release per host': the variable %s is left in %r (known: __interval, __rate_interval, gpu_group)" % (
        left,
        expr,
    )


def test_bad_arguments_are_refused():
    with pytest.raises(AnsibleFilterError, match='expected the dashboard as an object'):
        dashboard_queries('{"panels": []}')
    with pytest.raises(AnsibleFilterError, match='variables must be a dict, got list'):
        dashboard_queries(_dashboard(), ['gpu_group'])
    with pytest.raises(AnsibleFilterError, match="variable gpu_group must be a string or a number, got \\['a', 'b'\\]"):
        dashboard_queries(_dashboard(), {'gpu_group': ['a', 'b']})
    with pytest.raises(AnsibleFilterError, match='a panel is not an object'):
        dashboard_queries({'panels': ['Throughput']})


def test_the_fleet_dashboard_every_panel_and_the_labels_each_target_must_return():
    with open(DASHBOARD) as handle:
        board = json.load(handle)
    queries = dashboard_queries(board)
    assert [(q['panel'], q['ref_id'], q['labels']) for q in queries] == [
        ('Generation throughput per host', 'A', ['host']),
        ('Requests per second per GPU group', 'A', ['gpu_group']),
        ('Time to first token per GPU group', 'A', ['gpu_group']),
        ('Time to first token per GPU group', 'B', ['gpu_group']),
        ('Inter-token latency per GPU group', 'A', ['gpu_group']),
        ('Inter-token latency per GPU group', 'B', ['gpu_group']),
        ('Queued and running requests per host', 'A', ['host']),
        ('Queued and running requests per host', 'B', ['host']),
        ('KV cache token usage per host', 'A', ['host']),
        ('Speculative accept length per GPU group', 'A', ['gpu_group']),
        ('Release per host', 'A', ['gpu_group', 'host', 'release', 'unit_sha256']),
        ('Last verdict per host', 'A', ['gpu_group', 'host', 'service']),
        ('Last verdict per host', 'B', ['action', 'cause', 'deployed_release', 'gpu_group', 'host', 'outcome', 'service']),
    ]
    # every query is filtered by the GPU group variable, substituted with .* by default
    assert all('gpu_group=~".*"' in q['expr'] for q in queries)
    assert [q['expr'] for q in queries if q['panel'] == 'Time to first token per GPU group'] == [
        'histogram_quantile(0.5, sum by (le, gpu_group) (rate(sglang:time_to_first_token_seconds_bucket{gpu_group=~".*"}[1m])))',
        'histogram_quantile(0.99, sum by (le, gpu_group) (rate(sglang:time_to_first_token_seconds_bucket{gpu_group=~".*"}[1m])))',
    ]
    # the table targets are instant tables, which the lab's check runs as instant queries
    tables = [t for p in board['panels'] if p['type'] == 'table' for t in p['targets']]
    assert [(t['format'], t['instant']) for t in tables] == [('table', True)] * 3
    assert board['schemaVersion'] == 39
