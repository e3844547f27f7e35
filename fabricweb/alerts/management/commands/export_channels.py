from django.core.management.base import BaseCommand

from fabricweb.alerts.channelfile import export_channels


class Command(BaseCommand):
    help = "Print the notification channels as YAML (import_channels reads it back). Holds no secret."

    def add_arguments(self, parser):
        parser.add_argument("-o", "--output", help="write to this file instead of standard output")

    def handle(self, *args, output=None, **options):
        text = export_channels()
        if output:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            self.stdout.write(text, ending="")
