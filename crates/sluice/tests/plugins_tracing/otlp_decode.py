# Decodes an OTLP/HTTP ExportTraceServiceRequest (stdin) with opentelemetry-proto's generated classes, a
# decoder independent of Sluice's prost encoder, and prints its spans as JSON (ids in hex).
import json
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


request = ExportTraceServiceRequest()
request.ParseFromString(sys.stdin.buffer.read())
spans = []
for rs in request.resource_spans:
    resource = {kv.key: value(kv.value) for kv in rs.resource.attributes}
    for ss in rs.scope_spans:
        for s in ss.spans:
            spans.append({
                "resource": resource,
                "scope": [ss.scope.name, ss.scope.version],
                "trace_id": s.trace_id.hex(),
                "span_id": s.span_id.hex(),
                "parent": s.parent_span_id.hex(),
                "name": s.name,
                "kind": s.kind,
                "start": s.start_time_unix_nano,
                "end": s.end_time_unix_nano,
                "status": s.status.code,
                "attributes": {kv.key: value(kv.value) for kv in s.attributes},
            })
print(json.dumps(spans))
