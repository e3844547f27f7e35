"""/api/v1/ routes. Anything else under /api/ is a JSON 404, never an HTML page."""

from django.urls import path, re_path

from .errors import api_not_found
from .views import events, jobs, nodes, ports, samples, switches

app_name = "api"

urlpatterns = [
    path("v1/nodes", nodes.node_list, name="nodes"),
    path("v1/nodes/<str:name>", nodes.node_detail, name="node"),
    path("v1/nodes/<str:name>/read-errors", nodes.node_read_errors, name="node-read-errors"),
    path("v1/ports", ports.port_list, name="ports"),
    path("v1/ports/<str:node>/<str:device>/<int:port>", ports.port_detail, name="port"),
    path("v1/ports/<str:node>/<str:device>/<int:port>/samples", samples.sample_list, name="samples"),
    path("v1/events", events.event_list, name="events"),
    path("v1/events/<int:pk>", events.event_detail, name="event"),
    path("v1/switches", switches.switch_list, name="switches"),
    path("v1/switches/<str:key>", switches.switch_detail, name="switch"),
    path("v1/links", switches.link_list, name="links"),
    path("v1/topology-changes", switches.topology_change_list, name="topology-changes"),
    path("v1/jobs", jobs.job_list, name="jobs"),
    path("v1/jobs/<str:job_id>", jobs.job_detail, name="job"),
    re_path(r"^", api_not_found),
]
