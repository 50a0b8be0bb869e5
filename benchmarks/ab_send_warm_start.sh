#!/bin/bash
# obook send --rate 20000 from two checkouts, alternating in fresh processes (OLD=DIR: the
# checkout before a change, NEW=DIR: after it, default .), 5 rounds: the send lateness lines.
# DAY (default /tmp/sendday.itch): e.g. obook gen itch /tmp/sendday.itch -n 200000 -k 50
NEW=$(cd "${NEW:-.}" && pwd)
for r in 1 2 3 4 5; do
  for v in old new; do
    d=$NEW; [ $v = old ] && d=${OLD:?the sender before the change: a worktree, OLD=DIR}
    cd $d && line=$(python -m obook send ${DAY:-/tmp/sendday.itch} --rate 20000 --linger 0 --request "" --line-a 127.0.0.1:39101 --line-b 127.0.0.1:39102 2>&1 | grep "send lateness")
    echo "$r $v $line"
  done
done
