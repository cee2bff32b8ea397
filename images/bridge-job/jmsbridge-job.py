"""The bridge job's entry file: what every SparkApplication names as `mainApplicationFile`.

spark-submit runs this file in the driver with the SparkApplication's `arguments` (`--config
/etc/jmsbridge/job-<hash>.yaml --instance primary`); it is `jmsbridge job` with those arguments, the master
and the Spark settings coming from spark-submit.
"""

import sys

from jmsbridge.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["job", *sys.argv[1:]]))
