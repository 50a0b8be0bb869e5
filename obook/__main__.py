import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while importing: as quiet as one during the replay
    sys.stderr.write("interrupted\n")
    raise SystemExit(130) from None

main()
