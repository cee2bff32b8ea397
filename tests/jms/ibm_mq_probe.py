"""Run as a process of its own (JPype starts one JVM per process, with IBM MQ's jars here): the adapter
builds the connection factory a bridge describes for IBM MQ, then connects. Prints what the factory was
given, the API it implements and the adapter's error, one JSON object."""

from __future__ import annotations

import json
import sys

import jpype

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec
from bridge_job.jms import JmsConnection, JmsError, start_jvm
from bridge_job.jms.api import api_of
from bridge_job.jms.factories import connection_factory
from jmsbridge.ibm_mq import FACTORY_CLASSES, ibm_mq_classpath


def main(api: str, port: int) -> None:
    start_jvm(ibm_mq_classpath(api))
    spec = JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name=FACTORY_CLASSES[api],
            properties={
                "hostName": "127.0.0.1",
                "port": port,
                "queueManager": "QM1",
                "channel": "DEV.APP.SVRCONN",
                "transportType": 1,  # client mode: TCP to the queue manager's listener
                "sSLCipherSuite": "TLS_AES_256_GCM_SHA384",
            },
        ),
        sources=[JmsSource(queue="DEV.QUEUE.1")],
    )
    factory = connection_factory(spec)
    given = {
        "hostName": str(factory.getHostName()),
        "port": int(factory.getPort()),
        "queueManager": str(factory.getQueueManager()),
        "channel": str(factory.getChannel()),
        "transportType": int(factory.getTransportType()),
        "sSLCipherSuite": str(factory.getSSLCipherSuite()),
    }
    try:
        JmsConnection(spec, credentials=("app", "passw0rd")).close()
        error = None
    except JmsError as failure:
        error = str(failure)
    api_name = api_of(jpype.JClass(factory.getClass())).package
    print(json.dumps({"given": given, "api": api_name, "error": error}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
