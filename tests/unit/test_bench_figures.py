# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every benchmark figure quoted in README.md, docs/dev/benchmarks.md and docs/ssh.md matches its record in bench/results/.

Each table of docs/dev/benchmarks.md that quotes a benchmark is recomputed here from the JSON the
benchmark wrote (medians, spreads, ratios, counts, percentiles), cell by cell; the zero-downtime
JSON is recomputed in turn from the kept per-request records. A figure edited by hand, or a rerun
whose records were not copied into the docs, fails here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import importlib.util
import json
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
RESULTS = os.path.join(ROOT, 'bench', 'results')


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding='utf-8') as handle:
        return handle.read()


def record(name):
    return json.loads(read('bench', 'results', name))


def section(text, heading):
    """The text under a '## heading' up to the next '## '."""
    start = text.index('## ' + heading)
    end = text.find('\n## ', start + 1)
    return text[start:] if end < 0 else text[start:end]


def tables(text):
    """Every markdown table in text, as a list of rows, each a dict from header to cell."""
    found, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith('|') and i + 1 < len(lines) and re.match(r'^\|(\s*-+\s*\|)+$', lines[i + 1]):
            header = [c.strip() for c in lines[i].strip('|').split('|')]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith('|'):
                rows.append(dict(zip(header, [c.strip() for c in lines[i].strip().strip('|').split('|')])))
                i += 1
            found.append(rows)
        else:
            i += 1
    return found


BENCHMARKS = read('docs', 'dev', 'benchmarks.md')
README = read('README.md')


# --- unchanged deploy ---------------------------------------------------------------------------


def test_deploy_noop_tables_and_readme():
    noop = record('deploy_noop.json')
    text = section(BENCHMARKS, 'Unchanged deploy')
    runs, failing = tables(text)[:2]
    # exactly the rows of the record: zip stops at the shorter, so a deleted row would pass unseen
    assert [row['commit'] for row in runs] == [noop['base']['commit'], noop['head']['commit']]
    assert len(failing) == 2
    for row, side in zip(runs, ('base', 'head')):
        data = noop[side]
        assert row['commit'] == data['commit']
        assert int(row['tasks']) == data['tasks']
        assert float(row['seconds (median)']) == data['median_s']
        assert [float(v) for v in row['runs'].split(',')] == data['seconds']
    for row, side in zip(failing, ('base', 'head')):
        data = noop[side]
        assert float(row['wall s']) == data['failed_seconds'][0]
        assert float(row['crash seen after s']) == data['failed_crash_s'][0]
        assert float(row['wall beyond the crash s']) == round(data['failed_seconds'][0] - data['failed_crash_s'][0], 1)
    assert 'Ratio %.2fx (before / this tree)' % noop['ratio'] in text


# --- fleet upgrade ------------------------------------------------------------------------------


def test_fleet_upgrade_tables():
    fleet = record('fleet_upgrade.json')
    runs = fleet['runs']
    by_size, by_16 = tables(section(BENCHMARKS, 'Fleet upgrade'))[:2]
    # one row per host count and per 16-host variant of the record, no more and no fewer
    assert sorted(int(row['hosts'].split()[0]) for row in by_size) == sorted(set(r['hosts'] for r in runs if r['name'] in ('batched', 'one_at_a_time')))
    assert sorted(row['16 hosts'] for row in by_16) == sorted(r['name'] for r in runs if r['hosts'] == 16 and r['name'] not in ('one_at_a_time',))
    for row in by_size:
        hosts = int(row['hosts'].split()[0])
        batched = [r for r in runs if r['hosts'] == hosts and r['name'] == 'batched'][0]
        one = [r for r in runs if r['hosts'] == hosts and r['name'] == 'one_at_a_time'][0]
        assert ('earlier run' in row['hosts']) == ('earlier' in batched)
        assert row['batched (canary + 50%)'] == '%.0f s' % batched['wall_s']
        assert row['one at a time (serial 1)'] == '%.0f s' % one['wall_s']
        assert row['one at a time / batched'] == '%.2fx' % (one['wall_s'] / batched['wall_s'])
        assert row['waves'] == '%d / %d' % (batched['waves'], one['waves'])
        assert row['deploy s per host (batched / one)'] == '%s / %s' % (batched['mean_deploy_s'], one['mean_deploy_s'])
        assert row['control overhead s per host (batched / one)'] == '%s / %s' % (batched['mean_overhead_s'], one['mean_overhead_s'])
    base = [r for r in runs if r['hosts'] == 16 and r['name'] == 'batched'][0]
    for row in by_16:
        run = [r for r in runs if r['hosts'] == 16 and r['name'] == row['16 hosts']][0]
        assert int(row['forks']) == run['forks']
        assert row['strategy'] == run['strategy']
        assert row['wall'] == '%.0f s' % run['wall_s']
        assert row['vs batched, forks 10, linear'] == '%.2fx' % (run['wall_s'] / base['wall_s'])
        assert float(row['deploy s per host']) == run['mean_deploy_s']
    machine = fleet['machine']
    assert (
        '%d s containers, %d s `lab/prepare.yml`, %d s first deploy' % (machine['containers_s'], machine['prepare_s'], machine['first_deploy_s'])
    ) in BENCHMARKS
    assert '%d MiB for all 16' % machine['mem_used_by_fleet_mib'] in BENCHMARKS.replace('\n', ' ')


# --- verdict latency ----------------------------------------------------------------------------


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VERDICT_SUMMARY = _load('verdict_summary', ('bench', 'verdict_summary.py'))


def test_verdict_latency_report_is_its_records():
    """bench/results/verdict_latency.md is bench/verdict_summary.py's report of the raw records beside it."""
    assert read('bench', 'results', 'verdict_latency.md') == VERDICT_SUMMARY.report(record('verdict_latency.json'))


def test_verdict_latency_tables_in_the_docs_are_the_reports():
    """docs/dev/benchmarks.md quotes both tables of the report whole: a row edited, added or deleted fails."""
    report = tables(read('bench', 'results', 'verdict_latency.md'))
    quoted = tables(section(BENCHMARKS, 'Verdict latency'))
    assert len(report) == 2
    assert quoted[:2] == report


def test_verdict_latency_every_loop_and_the_module_ran_ten_times_on_the_headline_case():
    data = record('verdict_latency.json')
    for arm in ('module',) + VERDICT_SUMMARY.LOOP_ARMS:
        assert len(VERDICT_SUMMARY.runs(data['records'], VERDICT_SUMMARY.HEADLINE_CASE, arm)) >= 10, arm


def test_readme_headline_is_against_the_strongest_loop_with_its_interval():
    """README quotes the module against the strongest loop of the records: its name, the ratio (the loop's time over the
    module's), both medians and the interval, as bench/verdict_summary.py computes them."""
    arm, module_s, loop_s, value, low, high = VERDICT_SUMMARY.headline(record('verdict_latency.json')['records'])
    text = ' '.join(README.split())
    found = re.search(
        r'\*\*(\S+)\*\* as quick as the strongest loop an operator writes.*?\(([^;]+);.*?([0-9.]+) s against ([0-9.]+) s.*?'
        r'95 % bootstrap interval (\S+)-(\S+?)\)',
        text,
    )
    assert found, 'README has no headline ratio against the strongest loop'
    ratio, named, loop, module, lower, upper = found.groups()
    assert (ratio, loop, module, lower, upper) == (
        VERDICT_SUMMARY.ratio_text(value),
        '%.2f' % loop_s,
        '%.2f' % module_s,
        VERDICT_SUMMARY.ratio_text(low),
        VERDICT_SUMMARY.ratio_text(high),
    )
    assert named == dict(VERDICT_SUMMARY.ARMS)[arm]


def test_bootstrap_ratio_of_medians():
    fast, slow = [0.5, 0.6, 0.7, 0.8, 0.9], [1.0, 1.2, 1.4, 1.6, 1.8]
    value, low, high = VERDICT_SUMMARY.bootstrap_ratio(slow, fast)
    assert value == 2.0
    assert low <= value <= high and low < high
    assert VERDICT_SUMMARY.bootstrap_ratio(slow, fast) == (value, low, high)  # a fixed seed: the same records, the same report
    assert VERDICT_SUMMARY.bootstrap_ratio([1.0] * 5, [1.0] * 5) == (1.0, 1.0, 1.0)


# --- zero-downtime upgrade ----------------------------------------------------------------------


def _ms(value):
    return 'none (over 1 % failed)' if value is None else '%.0f' % (value * 1000)


def zd_row(label, run):
    before, during = run['phases'].get('before', {}), run['phases'].get('during', {})
    errors = ', '.join('%d x %s' % (n, e) for e, n in sorted(run['total']['errors'].items())) or 'none'
    return {
        'run': label,
        'router retries': run['router_retries'],
        'sent': str(run['total']['sent']),
        'failed': str(run['total']['failed']),
        'failed during': str(during.get('failed', '-')),
        'p50 / p99 before ms': '%s / %s' % (_ms(before.get('p50_s')), _ms(before.get('p99_s'))),
        'p50 / p99 during ms': '%s / %s' % (_ms(during.get('p50_s')), _ms(during.get('p99_s'))),
        'p99 during, failures counted, ms': _ms(during.get('p99_all_s')),
        'max during ms': _ms(during.get('max_s')),
        'fewest healthy workers': str(run['total'].get('min_healthy_workers')),
        'upgrade s': '%.1f' % run['upgrade']['wall_s'] if run.get('upgrade') else '-',
        'errors': errors,
    }


def test_zero_downtime_table():
    zd = record('zero_downtime.json')
    rows = tables(section(BENCHMARKS, 'Zero-downtime upgrade'))[0]
    assert [row['run'] for row in rows] == list(zd['runs'])
    for row in rows:
        assert row == zd_row(row['run'], zd['runs'][row['run']])


@pytest.mark.parametrize('label', ['drain', 'no-drain', 'drain-retries-off', 'no-drain-retries-off'])
def test_zero_downtime_record_recomputes_its_summary(label):
    loadgen = _load('loadgen', ('bench', 'loadgen.py'))
    run = record('zero_downtime.json')['runs'][label]
    with gzip.open(os.path.join(ROOT, run['records']), 'rt', encoding='utf-8') as handle:
        summary = loadgen.summarize([json.loads(line) for line in handle if line.strip()])
    for phase, kept in run['phases'].items():
        for key in ('sent', 'ok', 'failed', 'p50_s', 'p99_s', 'p99_all_s', 'max_s', 'errors'):
            assert summary['phases'][phase][key] == kept[key], (phase, key)


def test_zero_downtime_retried_tail_from_the_records():
    """The requests that took over 150 ms beyond their own generation time (tokens x 10 ms in the simulator), and the
    largest such overhead; the upgrade's wall times the text compares."""
    zd = record('zero_downtime.json')

    def overheads(label):
        with gzip.open(os.path.join(ROOT, zd['runs'][label]['records']), 'rt', encoding='utf-8') as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        return [r['latency_s'] - r['tokens'] * 0.01 for r in records if r['ok'] and r['phase'] == 'during']

    def slow(label):
        return sum(1 for overhead in overheads(label) if overhead > 0.15)

    text = ' '.join(section(BENCHMARKS, 'Zero-downtime upgrade').split())
    assert (
        '%d answered requests during the upgrade took more than 150 ms beyond their own generation time '
        '(their tokens x 10 ms), against %d drained, and the slowest such overhead was %.0f ms against %.0f ms drained'
        % (slow('no-drain'), slow('drain'), max(overheads('no-drain')) * 1000, max(overheads('drain')) * 1000)
    ) in text
    wall = {label: run['upgrade']['wall_s'] for label, run in zd['runs'].items()}
    assert (
        '%.1f s against %.1f s with retries at their default, %.1f s against %.1f s with retries off'
        % (wall['drain'], wall['no-drain'], wall['drain-retries-off'], wall['no-drain-retries-off'])
    ) in text


# --- SSH against podman exec ------------------------------------------------------------------------


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def test_connections_tables():
    runs = record('connections.json')
    text = section(BENCHMARKS, 'Over SSH and through podman exec')
    unchanged, failing = tables(text)[:2]
    assert len(unchanged) == len(failing) == 2
    for row, side in zip(unchanged, ('podman', 'ssh')):
        data = runs[side]
        assert len(data['seconds']) == runs['runs']
        assert float(row['seconds (median)']) == data['median_s'] == round(median(data['seconds']), 2)
        assert [float(v) for v in row['runs'].split(',')] == data['seconds']
        assert int(row['tasks']) == data['tasks']
    for row, side in zip(failing, ('podman', 'ssh')):
        data = runs[side]
        assert len(data['failed_seconds']) == runs['failed_runs']
        assert float(row['wall s (median)']) == round(median(data['failed_seconds']), 2)
        assert float(row['beyond the crash s (median)']) == round(median(data['beyond_crash_s']), 2)
        assert float(row['crash to old unit restarted s (median)']) == round(median(data['crash_to_restart_s']), 2)
        assert [float(v) for v in row['wall s, runs'].split(',')] == data['failed_seconds']
    # bc's scale=2 truncates
    assert runs['ratio'] == int(runs['podman']['median_s'] / runs['ssh']['median_s'] * 100) / 100
    assert 'Ratio %.2fx (podman exec / SSH)' % runs['ratio'] in text
    assert 'runs %d tasks in %s s on a lab host over SSH' % (runs['ssh']['tasks'], runs['ssh']['median_s']) in README
    assert '(%s s through `podman exec`' % runs['podman']['median_s'] in README
    ssh_page = read('docs', 'ssh.md')
    assert (
        'takes %s s over SSH and %s s through `podman exec` (%d tasks each). That\n  is %.2fx.'
        % (runs['ssh']['median_s'], runs['podman']['median_s'], runs['ssh']['tasks'], runs['ratio'])
        in ssh_page
    )
    assert (
        'rollback included, takes %s s over SSH and %s s through' % (median(runs['ssh']['failed_seconds']), median(runs['podman']['failed_seconds']))
        in ssh_page
    )
    assert (
        "by the host's clock: %.2f s over SSH, %.2f s through" % (median(runs['ssh']['crash_to_restart_s']), median(runs['podman']['crash_to_restart_s']))
        in ssh_page
    )


def test_gate_cost_table():
    runs = record('gate_cost.json')
    text = section(BENCHMARKS, "The throughput gate's cost")
    off, on = tables(text)[0]
    for row, arm in ((off, 'off'), (on, 'on')):
        seconds = runs[arm + '_s']
        assert len(seconds) == runs['runs']
        assert [float(v) for v in row['runs'].split()] == seconds
        assert float(row['deploy s (median)']) == runs[arm + '_median_s'] == median(seconds)
    assert runs['overhead_s'] == round(runs['on_median_s'] - runs['off_median_s'], 1)
    assert runs['gate_median_s'] == median(runs['gate_s'])
    assert 'Overhead: %s s a deploy' % runs['overhead_s'] in text
    assert 'the gate task itself (gate_s, host clock): median %s s' % runs['gate_median_s'] in text


def _gate_errors_rows(name, index):
    runs = record(name + '.json')
    rows = tables(section(read('docs', 'gate.md'), 'Error rates, measured'))[index]
    # one row per arm, no more and no fewer: a deleted or added row fails (zip would stop at the shorter)
    assert [row['candidate'] for row in rows] == [arm['arm'] for arm in runs['summary']] == ['equal', 'slow10', 'slow20']
    for row, arm in zip(rows, runs['summary']):
        gates = [g for g in runs['gates'] if g['arm'] == arm['arm']]
        refused = sum(1 for g in gates if g['outcome'] == 'refused')
        ratios = sorted(g['ratio'] for g in gates)
        assert int(row['gates']) == len(gates) == runs['trials'] >= 20
        assert int(row['refused']) == refused == arm['refused']
        assert row['share refused'] == '%.0f %%' % (100.0 * refused / len(gates))
        assert row['ratio median (min-max)'] == '%.3f (%.3f-%.3f)' % (median(ratios), ratios[0], ratios[-1])
        assert float(row['gate s median']) == round(median([g['gate_s'] for g in gates]), 1)
        # each gate's decision follows from its interval: refused exactly when its upper end is below min_ratio
        for gate in gates:
            assert (gate['outcome'] == 'refused') == (gate['interval'][1] < runs['settings']['gate_min_ratio'])
    return runs, rows


def test_gate_errors_table_has_every_arm_and_each_rate_from_its_gates():
    runs, rows = _gate_errors_rows('gate_errors', 0)
    assert runs['simulator']['noise_process'] == runs['simulator']['noise_request'] == 'default'
    # the targets: an equal unit refused at most 5 % of the time, one 20 % slower caught at least 95 %
    assert rows[0]['candidate'] == 'equal' and int(rows[0]['refused']) <= 0.05 * int(rows[0]['gates'])
    assert rows[2]['candidate'] == 'slow20' and int(rows[2]['refused']) >= 0.95 * int(rows[2]['gates'])


def test_gate_errors_on_a_noisier_host_table():
    runs, rows = _gate_errors_rows('gate_errors_noisy', 1)
    assert (runs['simulator']['noise_process'], runs['simulator']['noise_request']) == ('0.02', '0.05')
    text = section(read('docs', 'gate.md'), 'Error rates, measured')
    assert '--noise-process 0.02 --noise-request 0.05 --name\ngate_errors_noisy`' in text
    refused_equal = [g for g in runs['gates'] if g['arm'] == 'equal' and g['outcome'] == 'refused']
    passed_slow10 = [g for g in runs['gates'] if g['arm'] == 'slow10' and g['outcome'] == 'passed']
    assert len(refused_equal) == len(passed_slow10) == 1
    assert 'its interval %.3f-%.3f' % tuple(refused_equal[0]['interval']) in text
    assert 'its interval reached %.2f' % passed_slow10[0]['interval'][1] in text


def test_zero_downtime_guide_quotes_the_four_arms_from_the_record():
    zd = record('zero_downtime.json')
    with open(os.path.join(ROOT, 'docs', 'zero-downtime.md'), encoding='utf-8') as handle:
        rows = tables(section(handle.read(), 'When draining matters'))[0]
    arms = {
        'drained, retries at smg\'s default': 'drain',
        'not drained, retries at smg\'s default': 'no-drain',
        'drained, retries off': 'drain-retries-off',
        'not drained, retries off': 'no-drain-retries-off',
    }
    assert [row['arm'] for row in rows] == list(arms)
    for row in rows:
        run = zd['runs'][arms[row['arm']]]
        assert row['failed requests'] == '%d of %d' % (run['total']['failed'], run['total']['sent'])
        assert row['upgrade.yml wall time'] == '%.1f s' % run['upgrade']['wall_s']
