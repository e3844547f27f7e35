from django.contrib import admin

from .models import Device, Node, Port


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "first_seen_at", "last_collected_at", "last_ingested_at"]
    search_fields = ["name"]


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = ["node", "name", "hca_type", "fw_ver", "pci_current_gts", "pci_current_width", "vanished_at"]
    list_filter = ["hca_type"]
    search_fields = ["node__name", "name", "node_guid"]
    raw_id_fields = ["node"]


@admin.register(Port)
class PortAdmin(admin.ModelAdmin):
    list_display = ["__str__", "state_name", "phys_state_name", "rate_gbps", "lanes", "speed"]
    list_filter = ["state_name", "speed", "lanes", "link_layer"]
    search_fields = ["device__node__name", "device__name"]
    raw_id_fields = ["device"]
    list_select_related = ["device__node"]
