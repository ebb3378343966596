import argparse
import sys


def build_parser():
    parser = argparse.ArgumentParser(description="Print a greeting.")
    parser.add_argument("name")
    parser.add_argument("--times", type=int, default=1)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    message = f"Hello, {args.name}!"
    for _ in range(args.times):
        print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
