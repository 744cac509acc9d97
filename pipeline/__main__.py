"""Entry point for spark-submit: the same jobs as `tangled pipeline`, master from spark-submit.

    PIPELINE=$(python -c 'import tanglenode.pipeline as p, os; print(os.path.dirname(p.__file__))')
    spark-submit --master spark://host:7077 "$PIPELINE/__main__.py" \\
        verify --in /data/archive --out /data/results

The workers need this project installed (or shipped with --py-files). The
exit code is the command's (docs/PIPELINE.md), as with `tangled pipeline`.
"""

import sys

import click

from tanglenode.pipeline.cli import pipeline_command


def main() -> int:
    args = [*sys.argv[1:], "--master", "submitted"]
    try:
        code = pipeline_command.main(args=args, prog_name="pipeline", standalone_mode=False)
    except click.exceptions.Exit as done:  # --help
        return done.exit_code
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.Abort:
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
