"""Prints the stage times of a scripts/test.sh run and, for a full run, writes them to a record.

Reads "STAGE RC SECONDS" lines on stdin. Arguments: the run's wall seconds, the record's path ('' for none), and
the run's stage list as scripts/test.sh spells it (lanes joined by '+', stages within a lane by ','). The record:
commit, date, wall seconds, and per stage its lane, exit status and seconds; per lane its seconds.
"""

import datetime
import json
import subprocess
import sys


def lanes_of(spec):
    """{stage: lane label} from the stage list ('a+b,c d' -> a: 'lane 1 of run 1', b and c: 'lane 2 of run 1', d: run 2)."""
    lanes = {}
    for run, part in enumerate(spec.split(), 1):
        for lane, stages in enumerate(part.split('+'), 1):
            for stage in stages.split(','):
                lanes[stage] = 'run %d lane %d' % (run, lane) if '+' in part else 'run %d' % run
    return lanes


def main(argv):
    wall, path, spec = int(argv[1]), argv[2], argv[3]
    lanes = lanes_of(spec)
    stages = []
    for line in sys.stdin:
        if line.strip():
            name, rc, seconds = line.split()
            stages.append({'stage': name, 'lane': lanes.get(name, ''), 'rc': int(rc), 'seconds': int(seconds)})
    totals = {}
    for stage in stages:
        totals[stage['lane']] = totals.get(stage['lane'], 0) + stage['seconds']
    print('stage times (s): ' + ', '.join('%s %d' % (s['stage'], s['seconds']) for s in stages))
    print('lanes (s): ' + ', '.join('%s %d' % (lane, seconds) for lane, seconds in totals.items()) + '; wall %d' % wall)
    if path:
        commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True, check=False).stdout.strip()
        record = {
            'commit': commit,
            'finished_at': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
            'wall_s': wall,
            'passed': sum(1 for s in stages if s['rc'] == 0),
            'failed': sum(1 for s in stages if s['rc']),
            'lanes_s': totals,
            'stages': stages,
        }
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(json.dumps(record, indent=1) + '\n')
        print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
