"""``python -m trident PROGRAM.py [ARGS]`` / ``python -m trident -m MODULE [ARGS]``: runs a
program written for Triton on Trident, unchanged — ``import triton`` gives Trident there."""

import runpy
import sys

from ._triton_alias import install


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("python -m trident -m MODULE [ARGS]: a module name is missing", file=sys.stderr)
            return 2
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
