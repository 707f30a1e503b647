# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rolling fleet upgrades: the plan (canary and batches per serving group), the gate a host
passes before it is touched, and the report (controller side, pure functions).

Ansible cannot create plays at run time, and a ``serial`` batch of one play spans every group.
So the plan orders the hosts in waves: wave 0 holds every group's canary, wave k the k-th batch
of every group, and ``upgrade.yml`` runs one play with ``serial`` = the wave sizes. Groups go on
independently because each host asks the gate, from the records its group's earlier hosts left,
whether its group may go on; Ansible's own ``max_fail_percentage`` would stop every group.
"""

from __future__ import annotations

import math

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.ddtree.sglang.plugins.module_utils.flag_check import scrub

# outcomes of a host that was tried; the failed ones count against the group's budget
TRIED = ('upgraded', 'unchanged', 'rolled_back', 'failed', 'unreachable')
FAILED = ('rolled_back', 'failed', 'unreachable')
OUTCOMES = TRIED + ('skipped', 'pending', 'deploying')
SPECIAL_GROUPS = ('all', 'ungrouped')


def _count(spec, total, what, rounding):
    """An int or 'N%' of total; percentages round as `rounding` says (floor or ceil)."""
    text = to_text(spec).strip()
    try:
        if text.endswith('%'):
            pct = float(text[:-1])
            if pct < 0 or pct > 100:
                raise ValueError(text)
            return int(rounding(pct / 100.0 * total))
        value = int(text)
        if value < 0:
            raise ValueError(text)
        return value
    except ValueError:
        raise AnsibleFilterError('%s must be a whole number or a percentage such as "25%%", got %r' % (what, spec))


def _batch_sizes(serial, hosts_left, cap):
    """Batch sizes for the hosts after the canary: Ansible's serial rules (a list repeats its
    last entry, a percentage is of the group's hosts in the play, rounded down but at least 1),
    each capped by the serving-capacity limit."""
    specs = serial if isinstance(serial, list) else [serial]
    if not specs:
        specs = [1]
    sizes = []
    left = hosts_left
    index = 0
    total = hosts_left + 1  # the group's hosts in the play, canary included
    while left > 0:
        spec = specs[min(index, len(specs) - 1)]
        size = max(1, _count(spec, total, 'upgrade_serial', math.floor))
        size = min(size, cap, left)
        sizes.append(size)
        left -= size
        index += 1
    return sizes


def serving_group(host, groups, explicit='', multinode='', ignore=None, servers_group='sglang_servers'):
    """The group a host is rolled out with: upgrade_group if set, else its multi-node group,
    else the smallest of its groups that holds only serving hosts (ties: by name)."""
    for name, source in ((explicit, 'upgrade_group'), (multinode, 'sglang_service_multinode_group')):
        if name:
            if host not in groups.get(name, []):
                raise AnsibleFilterError('%s of %s is %r, a group that does not hold %s' % (source, host, name, host))
            return name
    skip = set(SPECIAL_GROUPS) | {servers_group} | set(ignore or [])
    servers = set(groups.get(servers_group, []))
    candidates = [name for name, members in groups.items() if name not in skip and host in members and set(members) <= servers]
    if not candidates:
        return servers_group
    return sorted(candidates, key=lambda name: (len(groups[name]), name))[0]


def upgrade_plan(hosts, groups, explicit=None, multinode=None, serial=1, min_serving=0, ignore=None, servers_group='sglang_servers'):
    """Canary and batches per serving group, and the waves one play runs them in."""
    if not isinstance(hosts, list) or not hosts:
        raise AnsibleFilterError('upgrade_plan needs the list of hosts to upgrade, got %r' % (hosts,))
    explicit = explicit or {}
    multinode = multinode or {}
    host_group = {}
    order = []
    for host in hosts:
        name = serving_group(host, groups, explicit.get(host) or '', multinode.get(host) or '', ignore, servers_group)
        host_group[host] = name
        if name not in order:
            order.append(name)

    plan_groups = {}
    problems = []
    for name in order:
        members = [host for host in hosts if host_group[host] == name]
        size = len(groups.get(name, members))
        is_multinode = any(multinode.get(host) == name for host in members)
        keep = _count(min_serving, size, 'upgrade_min_serving', math.ceil)
        entry = {'hosts': members, 'size': size, 'multinode': is_multinode, 'min_serving': keep}
        if is_multinode:
            missing = [host for host in groups.get(name, []) if host not in members]
            if missing:
                problems.append(
                    'multi-node group %s serves one model from all its hosts, so they are upgraded together; '
                    'the run leaves out %s (widen the limit to the whole group)' % (name, ', '.join(missing))
                )
            entry.update(canary=members, batches=[], batch_size=len(members))
        else:
            cap = size - keep
            if cap < 1:
                problems.append(
                    'group %s has %d host(s) and upgrade_min_serving=%s keeps %d serving, so none can be taken down' % (name, size, min_serving, keep)
                )
                continue
            sizes = _batch_sizes(serial, len(members) - 1, cap)
            batches = []
            start = 1
            for size_k in sizes:
                batches.append(members[start : start + size_k])
                start += size_k
            entry.update(canary=members[:1], batches=batches, batch_size=max(sizes) if sizes else 1)
        plan_groups[name] = entry
    if problems:
        raise AnsibleFilterError('The upgrade cannot be planned (nothing was changed): ' + '; '.join(problems))

    waves = [sum((plan_groups[name]['canary'] for name in order), [])]
    depth = max(len(plan_groups[name]['batches']) for name in order)
    for index in range(depth):
        waves.append(sum((plan_groups[name]['batches'][index] for name in order if index < len(plan_groups[name]['batches'])), []))
    host_wave = {}
    host_step = {}
    for index, wave in enumerate(waves):
        for host in wave:
            host_wave[host] = index
    for name in order:
        entry = plan_groups[name]
        for host in entry['canary']:
            host_step[host] = 'canary'
        for index, batch in enumerate(entry['batches']):
            for host in batch:
                host_step[host] = 'batch %d' % (index + 1)
    lines = []
    for name in order:
        entry = plan_groups[name]
        text = '%s%s: canary %s' % (name, ' (multi-node, all hosts together)' if entry['multinode'] else '', ', '.join(entry['canary']))
        if entry['batches']:
            text += ', then ' + ' '.join('[%s]' % ', '.join(batch) for batch in entry['batches'])
        if not entry['multinode']:
            text += '; %d of %d kept serving' % (entry['size'] - entry['batch_size'], entry['size'])
        lines.append(text)
    return {
        'lines': lines,
        'group_order': order,
        'groups': plan_groups,
        'host_group': host_group,
        'host_wave': host_wave,
        'host_step': host_step,
        'waves': waves,
        'order': sum(waves, []),
        'serial': [len(wave) for wave in waves],
    }


def upgrade_gate(records, plan, host, max_fail_percentage=0):
    """Whether host may be upgraded now, from the records of its group's hosts of earlier waves."""
    group = plan['host_group'][host]
    entry = plan['groups'][group]
    wave = plan['host_wave'][host]
    try:
        budget = float(to_text(max_fail_percentage).rstrip('%'))
    except ValueError:
        raise AnsibleFilterError('upgrade_max_fail_percentage must be a number from 0 to 100, got %r' % (max_fail_percentage,))
    earlier = [
        record
        for record in (records or [])
        if isinstance(record, dict)
        and record.get('host') != host
        and plan['host_group'].get(record.get('host')) == group
        and plan['host_wave'].get(record.get('host'), wave) < wave
    ]
    if entry['multinode']:
        # one model over all its hosts: without one of them the others cannot serve either
        lost = [
            record['host']
            for record in (records or [])
            if isinstance(record, dict) and record.get('host') in entry['hosts'] and record.get('host') != host and record.get('outcome') == 'unreachable'
        ]
        if lost:
            return {'proceed': False, 'reason': 'multi-node group %s cannot start without %s (unreachable)' % (group, ', '.join(lost))}
    halted = [record for record in earlier if record.get('outcome') == 'skipped']
    if halted:
        return {'proceed': False, 'reason': halted[0].get('diagnosis', {}).get('diagnosis') or 'the group was stopped'}
    if not entry['multinode']:
        for record in earlier:
            if record.get('host') in entry['canary'] and record.get('outcome') in FAILED:
                return {
                    'proceed': False,
                    'reason': 'the canary %s of group %s %s (%s), so the group\'s rollout stopped'
                    % (record['host'], group, record['outcome'].replace('_', ' '), record.get('diagnosis', {}).get('cause') or 'see its row'),
                }
    tried = [record for record in earlier if record.get('outcome') in TRIED]
    failed = [record for record in tried if record.get('outcome') in FAILED]
    if tried and 100.0 * len(failed) / len(tried) > budget:
        names = ', '.join(record['host'] for record in failed)
        return {
            'proceed': False,
            'reason': '%d of %d host(s) of group %s failed (%s), more than upgrade_max_fail_percentage=%s, '
            'so the group\'s rollout stopped' % (len(failed), len(tried), group, names, max_fail_percentage),
        }
    return {'proceed': True, 'reason': ''}


def upgrade_release(manifest):
    """{id, sglang} of a release manifest (ddtree-release.json); sglang names the installed
    SGLang distribution, or the simulator for the lab's simulator-only releases."""
    if not isinstance(manifest, dict) or not manifest:
        return {'id': None, 'sglang': None}
    label = None
    provenance = manifest.get('sglang')
    if isinstance(provenance, dict):
        dist = provenance.get('distribution') or {}
        if dist.get('version'):
            label = '%s %s' % (dist.get('name') or 'sglang', dist['version'])
    if label is None:
        wheels = (manifest.get('inputs') or {}).get('wheels') or []
        for pin in wheels:
            if isinstance(pin, dict) and to_text(pin.get('name', '')).lower().replace('_', '-') in ('sglang', 'sglang-sim'):
                label = '%s %s' % (pin['name'], pin.get('version'))
                break
    return {'id': manifest.get('id'), 'sglang': label}


def _envelope_text(envelope):
    if not isinstance(envelope, dict):
        return ''
    words = []
    for key, short in (
        ('tp_size', 'tp'),
        ('nnodes', 'nodes'),
        ('mem_fraction_static', 'mem'),
        ('context_length', 'ctx'),
        ('max_running_requests', 'reqs'),
        ('speculative_algorithm', 'spec'),
    ):
        if envelope.get(key) not in (None, '', False):
            words.append('%s %s' % (short, envelope[key]))
    return ', '.join(words)


def _cell(text, limit=None):
    text = ' '.join(to_text(text if text is not None else '').split()).replace('|', '\\|')
    if limit and len(text) > limit:
        text = text[: limit - 3].rstrip() + '...'
    return text


def _change(before, after):
    if before == after:
        return _cell(before or '-')
    return '%s -> %s' % (_cell(before or '-'), _cell(after or '-'))


GATE_KEYS = ('outcome', 'ratio', 'interval', 'reasons', 'gate_s')
GATE_NUMBERS = ('output_throughput', 'request_throughput', 'ttft_p99_ms', 'itl_p99_ms', 'completed', 'failed')


def gate_row(result):
    """The throughput gate's numbers a report keeps from a sglang_gate result ({} when no gate ran)."""
    if not isinstance(result, dict) or not result.get('outcome') or result.get('skipped'):
        return {}
    row = dict((key, result.get(key)) for key in GATE_KEYS)
    row.update((key, (result.get('measured') or {}).get(key)) for key in GATE_NUMBERS)
    baseline = result.get('baseline') or {}
    row['baseline_output_throughput'] = (baseline.get('measured') or {}).get('output_throughput')
    return row


def _gate_cells(gate):
    if not gate:
        return ['', '', '-']
    ratio, interval = gate.get('ratio'), gate.get('interval')
    ratio_cell = '' if ratio is None else '%.3f' % float(ratio)
    if ratio_cell and isinstance(interval, (list, tuple)) and len(interval) == 2:
        ratio_cell += ' (%.3f-%.3f)' % (float(interval[0]), float(interval[1]))
    return ['' if gate.get('output_throughput') is None else '%.1f' % float(gate['output_throughput']), ratio_cell, _cell(gate.get('outcome'))]


def upgrade_report(records, plan=None, diagnosis_chars=160, secrets=None):
    """The fleet report: records in plan order, counts per outcome, and a Markdown table.

    ``secrets`` (the hosts' keys and tokens) and the values of secret flags are masked in the records first, before
    a cell is cut to its width or has its '|' escaped: a secret cut in half, or holding a '|', would survive a later
    scrub of the table."""
    records = scrub(list(records or []), [str(s) for s in (secrets or []) if s])
    rows = []
    for record in records:
        if not isinstance(record, dict):
            continue
        row = dict(record)
        row['gate'] = gate_row(row.get('gate'))
        if row.get('outcome') == 'deploying':
            # the host vanished while it was being deployed (the connection dropped)
            row['outcome'] = 'unreachable'
        rows.append(row)
    if plan:
        position = {host: index for index, host in enumerate(plan.get('order', []))}
        rows.sort(key=lambda row: position.get(row.get('host'), len(position)))
    summary = {}
    for row in rows:
        summary[row.get('outcome', 'pending')] = summary.get(row.get('outcome', 'pending'), 0) + 1
    lines = [
        '| host | group | step | outcome | release | sglang | envelope | deploy s | verdict s | tok/s | ratio | gate | diagnosis |',
        '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ]
    for row in rows:
        before = row.get('before') or {}
        after = row.get('after') or {}
        timings = row.get('timings') or {}
        diag = row.get('diagnosis') or {}
        text = ''
        if diag.get('cause'):
            text = '%s: %s' % (diag['cause'], diag.get('diagnosis') or '')
        elif diag.get('diagnosis'):
            text = diag['diagnosis']
        if diag.get('advice'):
            text += ' Advice: ' + diag['advice']
        lines.append(
            '| %s |'
            % ' | '.join(
                [
                    _cell(row.get('host')),
                    _cell(row.get('group')),
                    _cell(row.get('step')),
                    _cell((row.get('outcome') or '').replace('_', ' ')),
                    _change(before.get('id'), after.get('id')),
                    _change(before.get('sglang'), after.get('sglang')),
                    _cell(_envelope_text(row.get('envelope'))),
                    _cell('' if timings.get('deploy_s') is None else '%.1f' % float(timings['deploy_s'])),
                    _cell('' if timings.get('verdict_s') is None else '%.1f' % float(timings['verdict_s'])),
                ]
                + _gate_cells(row['gate'])
                + [
                    _cell(text, diagnosis_chars),
                ]
            )
        )
    order = [outcome for outcome in OUTCOMES if outcome in summary] + sorted(set(summary) - set(OUTCOMES))
    text = ', '.join('%d %s' % (summary[outcome], outcome.replace('_', ' ')) for outcome in order)
    return {'hosts': rows, 'summary': summary, 'summary_text': text, 'markdown': '\n'.join(lines) + '\n'}


class FilterModule(object):
    def filters(self):
        return {
            'upgrade_plan': upgrade_plan,
            'upgrade_gate': upgrade_gate,
            'upgrade_release': upgrade_release,
            'upgrade_report': upgrade_report,
        }
