"""IBM MQ's JMS clients as `scripts/install-ibm-mq-client.sh` fetched them (no queue manager runs here)."""

from __future__ import annotations

from jmsbridge.cache import cache_dir

IBM_MQ_DIR = cache_dir("ibm-mq", "IBM_MQ_DIR") / "current"  # as scripts/install-ibm-mq-client.sh puts it
FACTORY_CLASSES = {  # the connection factory of each client
    "javax": "com.ibm.mq.jms.MQConnectionFactory",
    "jakarta": "com.ibm.mq.jakarta.jms.MQConnectionFactory",
}


def ibm_mq_classpath(api: str) -> list[str]:
    """The jars a bridge names in jms.classpath for IBM MQ's client of `api` ("javax" or "jakarta")."""
    directory = IBM_MQ_DIR / api
    if not directory.is_dir():
        raise RuntimeError(
            f"IBM MQ's {api} client is not in {directory}: run scripts/setup.sh "
            "(or scripts/install-ibm-mq-client.sh) to fetch it with Maven"
        )
    return [str(directory / "*.jar")]
