"""The `jmsbridge` command line: the one entry point to the job, the operator and the tools."""
