"""Tables of bench/fleet_upgrade.sh: upgrade wall time batched against one at a time, and the
control-side overhead per host (deploy time minus the simulator's own start delay)."""

import argparse
import glob
import json
import os
import re
import statistics

SETTLE_S = 5.0  # the verdict's settle window (sglang_service_verdict_settle_s), spent waiting on purpose


def load_run(path):
    with open(path) as f:
        run = json.load(f)
    reports = sorted(glob.glob(os.path.join(run['dir'], 'upgrade-*.json')))
    report = json.load(open(reports[-1])) if reports else {'hosts': [], 'plan': {'serial': []}, 'summary': {}}
    sim_path = os.path.join(run['dir'], 'sim.json')
    sim = json.load(open(sim_path)) if os.path.exists(sim_path) else {}
    hosts = []
    for row in report['hosts']:
        delays = sim.get(row['host']) or {}
        start = None
        if delays.get('first_us') and delays.get('ready_us'):
            start = (delays['ready_us'] - delays['first_us']) / 1e6
        deploy = (row.get('timings') or {}).get('deploy_s')
        hosts.append(
            {
                'host': row['host'],
                'outcome': row['outcome'],
                'deploy_s': deploy,
                'sim_start_s': start,
                'overhead_s': round(deploy - start, 2) if deploy is not None and start is not None else None,
            }
        )
    run.update(waves=len(report['plan'].get('serial', [])), summary=report.get('summary', {}), host_rows=hosts)
    for key in ('deploy_s', 'sim_start_s', 'overhead_s'):
        values = [h[key] for h in hosts if h[key] is not None]
        run['mean_' + key] = round(statistics.mean(values), 2) if values else None
    return run


def earlier_runs(path, runs):
    """Runs of an earlier results file whose (name, hosts) this run does not have, so that a run
    of the larger sizes alone does not erase the smaller ones measured before."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        previous = json.load(f)
    have = {(run['name'], run['hosts']) for run in runs}
    kept = []
    for run in previous.get('runs', []):
        if (run['name'], run['hosts']) not in have and run['name'] in ('batched', 'one_at_a_time'):
            # kept twice over, a run keeps the date of the run that measured it
            run['earlier'] = run.get('earlier') or previous.get('machine', {}).get('date') or 'an earlier run'
            kept.append(run)
    return kept


def _secs(value):
    return 'not measured' if value is None else '%.0f s' % value


def mib(text):
    match = re.match(r'\s*([\d.]+)\s*([kKMG]i?B|B)', text or '')
    if not match:
        return None
    scale = {'B': 1 / 1048576, 'kB': 1 / 1024, 'KiB': 1 / 1024, 'kiB': 1 / 1024, 'MB': 1, 'MiB': 1, 'GB': 1024, 'GiB': 1024}
    return float(match.group(1)) * scale.get(match.group(2), 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--machine')
    parser.add_argument('--memory')
    parser.add_argument('--batch-serial', default='25%')
    parser.add_argument('--md', required=True)
    parser.add_argument('--json', required=True)
    parser.add_argument('--previous', help='an earlier fleet_upgrade.json: its runs of sizes this run does not measure are kept, marked as earlier')
    parser.add_argument('runs', nargs='+')
    args = parser.parse_args()
    runs = [load_run(path) for path in args.runs]
    runs += earlier_runs(args.previous, runs)
    machine = json.load(open(args.machine)) if args.machine else {}
    memory = json.load(open(args.memory)) if args.memory else []
    per_container = [mib(entry.get('mem_usage') or entry.get('MemUsage') or '') for entry in memory]
    per_container = [value for value in per_container if value is not None]
    if per_container:
        machine['container_mem_mib_mean'] = round(statistics.mean(per_container), 1)
        machine['container_mem_mib_max'] = round(max(per_container), 1)
    if machine.get('mem_available_before_kib') and machine.get('mem_available_after_kib'):
        machine['mem_used_by_fleet_mib'] = round((machine['mem_available_before_kib'] - machine['mem_available_after_kib']) / 1024)

    lines = [
        '| hosts | batched (canary + %s) | one at a time (serial 1) | one at a time / batched | waves | '
        'deploy s per host (batched / one) | simulator start s | control overhead s per host (batched / one) |' % args.batch_serial,
        '|---|---|---|---|---|---|---|---|',
    ]
    sizes = sorted({run['hosts'] for run in runs if run['name'] in ('batched', 'one_at_a_time')})
    for size in sizes:
        batched = next((run for run in runs if run['name'] == 'batched' and run['hosts'] == size), None)
        single = next((run for run in runs if run['name'] == 'one_at_a_time' and run['hosts'] == size), None)
        # a size with one of its runs missing: the benchmark is still running, or was stopped
        none = {'wall_s': None, 'waves': None, 'mean_deploy_s': '-', 'mean_sim_start_s': '-', 'mean_overhead_s': '-'}
        one, two = batched or none, single or none
        kept_from_earlier = (batched or single).get('earlier')
        lines.append(
            '| %s | %s | %s | %s | %s / %s | %s / %s | %s | %s / %s |'
            % (
                '%d (earlier run)' % size if kept_from_earlier else size,
                _secs(one['wall_s']),
                _secs(two['wall_s']),
                '%.2fx' % (two['wall_s'] / one['wall_s']) if batched and single else 'not measured',
                one['waves'] if batched else '-',
                two['waves'] if single else '-',
                one['mean_deploy_s'],
                two['mean_deploy_s'],
                (single or batched)['mean_sim_start_s'],
                one['mean_overhead_s'],
                two['mean_overhead_s'],
            )
        )
    variants = [run for run in runs if run['name'] not in ('batched', 'one_at_a_time')]
    if variants:
        biggest = variants[0]['hosts']
        base = next((run for run in runs if run['name'] == 'batched' and run['hosts'] == biggest), None)
        header = '| %d hosts | forks | strategy | serial | wall | vs batched, forks 10, linear | deploy s per host | control overhead s per host |'
        lines += ['', header % biggest, '|---|---|---|---|---|---|---|---|']
        for run in ([base] if base else []) + variants:
            lines.append(
                '| %s | %d | %s | %s | %.0f s | %s | %s | %s |'
                % (
                    run['name'],
                    run['forks'],
                    run['strategy'],
                    run['serial'],
                    run['wall_s'],
                    '%.2fx' % (run['wall_s'] / base['wall_s']) if base else '-',
                    run['mean_deploy_s'],
                    run['mean_overhead_s'],
                )
            )
    earlier_dates = sorted({run['earlier'] for run in runs if run.get('earlier')})
    bad = [run for run in runs if run['rc'] != 0 or set(run['summary']) - {'upgraded'}]
    notes = [
        '',
        'Every host upgraded in every run.'
        if not bad
        else 'Runs where not every host upgraded: ' + ', '.join('%d (%s, rc %d, %s)' % (run['run'], run['name'], run['rc'], run['summary']) for run in bad),
    ]
    if earlier_dates:
        notes.append('Rows marked "earlier run" are kept from the previous results file (%s), not measured in this run.' % ', '.join(earlier_dates))
    if machine:
        notes.append('Machine: %s' % json.dumps(machine, sort_keys=True))
    text = '\n'.join(lines + notes) + '\n'
    with open(args.md, 'w') as f:
        f.write(text)
    with open(args.json, 'w') as f:
        json.dump({'machine': machine, 'settle_s': SETTLE_S, 'runs': runs}, f, indent=1, sort_keys=True)
        f.write('\n')


if __name__ == '__main__':
    main()
