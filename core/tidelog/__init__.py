"""tidelog: Kafka's log, rebuilt serverless on AWS."""

__version__ = "0.1.0"
