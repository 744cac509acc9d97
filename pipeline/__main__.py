"""Entry point for spark-submit: the same jobs as `tangled pipeline`, master from spark-submit.

    PIPELINE=$(python -c 'import tanglenode.pipeline as p, os; print(os.path.dirname(p.__file__))')
    spark-submit --master spark://host:7077 "$PIPELINE/__main__.py" \\
        verify --in /data/archive --out /data/results

The workers need this project installed (or shipped with --py-files).
"""

import sys

from tanglenode.pipeline.cli import pipeline_command

if __name__ == "__main__":
    sys.exit(pipeline_command.main(args=[*sys.argv[1:], "--master", "submitted"]))
