from django.contrib import admin

from .models import Event, LinkPolicy


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["opened_at", "severity", "kind", "node", "device", "port", "message", "resolved_at"]
    list_filter = ["severity", "kind", ("resolved_at", admin.EmptyFieldListFilter)]
    search_fields = ["key", "message", "node__name"]
    raw_id_fields = ["node", "device", "port"]
    date_hierarchy = "opened_at"


@admin.register(LinkPolicy)
class LinkPolicyAdmin(admin.ModelAdmin):
    list_display = ["name", "node_glob", "device_glob", "port_glob", "speed", "lanes", "expect_up", "order", "enabled"]
    list_editable = ["enabled"]
    search_fields = ["name", "node_glob", "device_glob"]
