from django.contrib import admin
from django.utils.html import format_html_join

from .models import NodePoll, PortRollup
from .storage.packing import HEAD, unpack


@admin.register(NodePoll)
class NodePollAdmin(admin.ModelAdmin):
    list_display = ["ts", "node", "port_count"]
    raw_id_fields = ["node"]
    list_select_related = ["node"]
    date_hierarchy = "ts"
    exclude = ["ports"]  # bytes: shown decoded instead
    readonly_fields = ["samples"]
    # Millions of rows: an exact count per page load would be the slowest query of the admin.
    show_full_result_count = False

    @admin.display(description="ports")
    def port_count(self, obj: NodePoll) -> int:
        return len(unpack(bytes(obj.ports)))

    @admin.display(description="samples (port id: head; deltas)")
    def samples(self, obj: NodePoll) -> str:
        return format_html_join(
            "",
            "<p>port {}: {}; deltas {}</p>",
            (
                (port_id, ", ".join(f"{k}={v}" for k, v in zip(HEAD, head, strict=True)), deltas)
                for port_id, head, deltas in unpack(bytes(obj.ports))
            ),
        )


@admin.register(PortRollup)
class PortRollupAdmin(admin.ModelAdmin):
    list_display = ["bucket", "period_s", "port", "samples", "worst_state_id", "symbol_error", "max_xmit_bps"]
    list_filter = ["period_s"]
    raw_id_fields = ["port"]
    list_select_related = ["port__device__node"]
    show_full_result_count = False
