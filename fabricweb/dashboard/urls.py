"""Dashboard pages (login required) and the operator actions (POST)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from .views import actions, events, exports, jobs, node, overview, port, search, switchpages, wall

app_name = "dashboard"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("fabric/", switchpages.fabric_page, name="fabric"),
    path("switches/<str:key>/", switchpages.switch_page, name="switch"),
    path("nodes/<str:name>/", node.node_page, name="node"),
    path("nodes/<str:name>/accept-norm", actions.accept_node_norm, name="accept_norm"),
    path("nodes/<str:name>/drain", actions.drain_node, name="drain_node"),
    path("nodes/<str:name>/drain/undo", actions.undo_drain, name="undo_drain"),
    path("ports/<str:node>/<str:device>/<int:port>/", port.port_page, name="port"),
    path("ports/<str:node>/<str:device>/<int:port>/series", port.port_series, name="port_series"),
    path("ports/<str:node>/<str:device>/<int:port>/baseline", actions.baseline, name="baseline"),
    path("ports/<str:node>/<str:device>/<int:port>/baseline/undo", actions.undo_port_baseline, name="undo_baseline"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<str:job_id>/", jobs.job_page, name="job"),
    path("events/", events.event_list, name="events"),
    path("events/<int:pk>/acknowledge", actions.acknowledge, name="acknowledge"),
    path("events/<int:pk>/silence", actions.silence_event, name="silence_event"),
    path("silences/", actions.silence, name="silence"),
    path("silences/<int:pk>/lift", actions.lift_silence, name="lift_silence"),
    path("search/", search.search, name="search"),
    path("ports.csv", exports.ports_csv, name="ports_csv"),
    path("wall/", wall.wall, name="wall"),
    path("wall/links/", wall.wall_links, name="wall_links"),
    path("wall/links/<int:pk>/revoke", wall.revoke_wall_link, name="revoke_wall_link"),
]
