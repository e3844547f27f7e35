from django.core.management.base import BaseCommand, CommandError

from fabricweb.alerts.channelfile import ChannelFileError, import_channels


class Command(BaseCommand):
    help = (
        "Create or update notification channels from a YAML file (all or nothing; see fabricweb/alerts/channelfile.py)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--replace", action="store_true", help="also delete channels the file does not name")

    def handle(self, *args, file, replace, **options):
        try:
            with open(file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise CommandError(f"{file}: {e.strerror}") from None
        try:
            created, updated, deleted = import_channels(text, replace=replace)
        except ChannelFileError as e:
            raise CommandError(f"{file}: {e}; nothing was imported") from None
        self.stdout.write(f"channels: {created} created, {updated} updated, {deleted} deleted")
