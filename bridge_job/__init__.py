"""The bridge job: JMS -> journal -> Spark -> Kafka, and Kafka -> JMS."""
