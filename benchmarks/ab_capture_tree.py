"""A capture replay (two lines with drops, one worker) in two source trees, fresh processes
alternating: wall and the parent's CPU (where the lines are read and arbitrated), medians.

    git archive HEAD | tar -x -C /tmp/old_tree
    obook gen itch /tmp/bm/day.itch -n 2000000 -k 500
    obook gen pcap /tmp/bm/day.itch /tmp/bm/a.pcap /tmp/bm/b.pcap --drop 0.01
    python benchmarks/ab_capture_tree.py /tmp/bm 10 [OLD_TREE [NEW_TREE]]
"""
import os
import statistics
import subprocess
import sys

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
answer_help(__doc__, 2)
trees = {"old": sys.argv[3] if len(sys.argv) > 3 else "/tmp/old_tree",
         "new": sys.argv[4] if len(sys.argv) > 4 else HERE}
code = r'''
import time, resource, obook, sys
src = obook.lines(a=sys.argv[1] + "/a.pcap:233.54.12.111:26477", b=sys.argv[1] + "/b.pcap:233.54.12.112:26477")
list(obook.bbo(src, workers=1))       # warm (compiled caches loaded)
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
n = sum(b.num_rows for b in obook.bbo(src, workers=1))
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t0, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, n)
'''
d = sys.argv[1]
res = {k: [] for k in trees}
for rnd in range(int(sys.argv[2])):
    for k in (("old", "new") if rnd % 2 == 0 else ("new", "old")):
        out = subprocess.run([sys.executable, "-c", code, d], env={**os.environ, "PYTHONPATH": trees[k]},
                             capture_output=True, text=True, cwd="/tmp")
        if out.returncode:
            print(out.stderr[-2000:]); sys.exit(1)
        wall, cpu, n = out.stdout.split()
        res[k].append((float(wall), float(cpu), int(n)))
        print(rnd, k, wall, cpu, n, flush=True)
for k, v in res.items():
    print(k, "wall median", statistics.median(x[0] for x in v), "parent cpu median", statistics.median(x[1] for x in v), "rows", v[0][2])
