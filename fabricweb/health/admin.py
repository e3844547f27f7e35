from django.contrib import admin

from .models import Acknowledgement, DrainPolicy, Event, LinkPolicy, Silence


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["opened_at", "severity", "kind", "node", "device", "port", "message", "clean_polls", "resolved_at"]
    list_filter = ["severity", "kind", ("resolved_at", admin.EmptyFieldListFilter)]
    search_fields = ["key", "message", "node__name"]
    raw_id_fields = ["node", "device", "port"]
    date_hierarchy = "opened_at"
    list_select_related = ["node", "device__node", "port__device__node"]


@admin.register(LinkPolicy)
class LinkPolicyAdmin(admin.ModelAdmin):
    list_display = ["name", "node_glob", "device_glob", "port_glob", "speed", "lanes", "expect_up", "order", "enabled"]
    list_editable = ["enabled"]
    list_filter = ["enabled", "expect_up", "speed", "lanes"]
    search_fields = ["name", "node_glob", "device_glob"]


@admin.register(Acknowledgement)
class AcknowledgementAdmin(admin.ModelAdmin):
    list_display = ["at", "event", "by_name", "note"]
    raw_id_fields = ["event", "by"]
    list_select_related = ["event"]


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "node_glob",
        "device_glob",
        "port_glob",
        "kind_glob",
        "starts_at",
        "ends_at",
        "lifted_at",
    ]
    list_filter = [("lifted_at", admin.EmptyFieldListFilter)]
    search_fields = ["node_glob", "reason", "created_by_name"]
    raw_id_fields = ["created_by"]


@admin.register(DrainPolicy)
class DrainPolicyAdmin(admin.ModelAdmin):
    list_display = ["name", "node_glob", "kinds", "severity", "drain", "order", "enabled"]
    list_editable = ["enabled"]
    search_fields = ["name", "node_glob"]
