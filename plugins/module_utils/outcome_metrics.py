# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A deploy's outcome as node-exporter textfile metrics (``ddtree_sglang_*``, docs/observability.md).

Pure functions: the module (sglang_outcome_metrics) reads the previous file, renders the new one and writes it
atomically. Counters need the previous value: the file itself is the state, so a host that lost it starts them
again from zero, which Prometheus' rate() and increase() read as a counter reset.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

PREFIX = 'ddtree_sglang_'

# name -> (type, help); the order is the file's
METRICS = (
    ('last_deploy_timestamp_seconds', 'gauge', 'When the last deploy or rollback of the service ended (Unix time).'),
    ('last_verdict_healthy', 'gauge', "The last deploy's verdict on its new unit: 1 healthy, 0 failed."),
    (
        'last_deploy_info',
        'gauge',
        'The last deploy or rollback: action, outcome (upgraded, unchanged, rolled_back, failed), the verdict cause and the release it deployed.',
    ),
    ('gate_ratio', 'gauge', "The last throughput gate's ratio of candidate to baseline throughput."),
    ('gate_passed', 'gauge', 'Whether the last throughput gate let the new unit stay: 1 passed, 0 refused.'),
    ('rollbacks_total', 'counter', 'Rollbacks to the last known good unit, made by a deploy that failed or on demand.'),
    ('last_rollback_timestamp_seconds', 'gauge', 'When the last rollback ended (Unix time).'),
)

_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)')


def escape_label(value):
    """A label value as the text format writes it: backslash, double quote and line feed escaped."""
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def read_samples(text):
    """``{metric name: float}`` of the samples in a textfile (labels ignored: one service a file), comments and
    unreadable lines skipped, so that a file damaged by hand costs its counters, not the deploy."""
    samples = {}
    for line in (text or '').splitlines():
        match = _SAMPLE.match(line.strip())
        if not match:
            continue
        try:
            samples[match.group('name')] = float(match.group('value'))
        except ValueError:
            continue
    return samples


def _number(value):
    value = float(value)
    return '%d' % value if value == int(value) else repr(value)


def render(outcome, previous_text=''):
    """The textfile for one run's ``outcome``:

    service, action (deploy or rollback), outcome, cause (the failed verdict's cause, '' when healthy), release (the
    release the run deployed, '' without one), verdict_healthy (True, False, or None when no verdict judged a new
    unit), gate_ratio and gate_passed (None without a gate), rolled_back (the run restored the last known good unit),
    timestamp (Unix seconds). ``previous_text``: the file before, for the counter and the last rollback's time.
    """
    previous = read_samples(previous_text)
    service = {'service': outcome['service']}
    values = {
        'last_deploy_timestamp_seconds': [(service, outcome['timestamp'])],
        'last_deploy_info': [
            (
                dict(
                    service,
                    action=outcome['action'],
                    outcome=outcome['outcome'],
                    cause=outcome.get('cause') or '',
                    deployed_release=outcome.get('release') or '',
                ),
                1,
            )
        ],
        'rollbacks_total': [(service, previous.get(PREFIX + 'rollbacks_total', 0) + (1 if outcome.get('rolled_back') else 0))],
    }
    if outcome.get('verdict_healthy') is not None:
        values['last_verdict_healthy'] = [(service, 1 if outcome['verdict_healthy'] else 0)]
    elif PREFIX + 'last_verdict_healthy' in previous:
        # a run that judged no new unit (unchanged, or a rollback on demand) leaves the last verdict as it was
        values['last_verdict_healthy'] = [(service, previous[PREFIX + 'last_verdict_healthy'])]
    if outcome.get('gate_ratio') is not None:
        values['gate_ratio'] = [(service, outcome['gate_ratio'])]
        values['gate_passed'] = [(service, 1 if outcome.get('gate_passed') else 0)]
    if outcome.get('rolled_back'):
        values['last_rollback_timestamp_seconds'] = [(service, outcome['timestamp'])]
    elif PREFIX + 'last_rollback_timestamp_seconds' in previous:
        values['last_rollback_timestamp_seconds'] = [(service, previous[PREFIX + 'last_rollback_timestamp_seconds'])]

    lines = []
    for name, kind, text in METRICS:
        if name not in values:
            continue
        lines.append('# HELP %s%s %s' % (PREFIX, name, text))
        lines.append('# TYPE %s%s %s' % (PREFIX, name, kind))
        for labels, value in values[name]:
            rendered = ','.join('%s="%s"' % (key, escape_label(labels[key])) for key in sorted(labels))
            lines.append('%s%s{%s} %s' % (PREFIX, name, rendered, _number(value)))
    return '\n'.join(lines) + '\n'
