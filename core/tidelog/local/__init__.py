"""The embedded AWS stack: tidelog with no AWS account and no Docker.

- :mod:`~tidelog.local.emulator` serves moto behind one global lock (atomic conditional writes),
- :mod:`~tidelog.local.template` reads ``infra/template.yaml``, the one description of the stack,
- :mod:`~tidelog.local.stack` creates its resources on the emulator through the AWS APIs,
- :mod:`~tidelog.local.lambdas` runs the functions in-process, as Lambda environments would,
- :mod:`~tidelog.local.gateway` turns HTTP requests into API Gateway proxy events,
- :mod:`~tidelog.local.dev` puts them together behind ``tidelog dev``.

Nothing here is imported by the functions themselves; it needs the ``local`` extra.
"""
