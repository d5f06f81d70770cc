"""Notifications: the requester of a ticket hears when it is resolved.

There is no mail server here, so the subscriber records the notification as a row that the
requester reads through ``helpdesk.notification.inbox``. A real deployment would send the
mail from a (non-transactional) subscriber instead, or from a webhook receiver: a delivery is
at least once, so the mail should carry the event id for the receiver to drop duplicates.
"""

from __future__ import annotations

from plugin_api import (
    Entity,
    EventContext,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Projection,
    ReadAccess,
    RowScope,
    Subscriber,
    dry_run_safe,
)

TICKET = "helpdesk.ticket"
NOTIFICATION = "helpdesk.notification"

# docs:start notification-entity
notification = Entity(
    fqn=NOTIFICATION,
    label="Notification",
    fields=(
        Field(name="recipient", type=FieldType.STRING),
        Field(name="ticket", type=FieldType.REFERENCE, target=TICKET),
        Field(name="event_id", type=FieldType.STRING, max_length=26),
        Field(name="message", type=FieldType.STRING),
    ),
)

inbox = Projection(
    fqn=f"{NOTIFICATION}.inbox",
    entity=NOTIFICATION,
    label="Inbox",
    fields=("id", "recipient", "ticket", "event_id", "message", "created_at"),
    listing=ListOptions(
        filters=(Filter(field="ticket"), Filter(field="recipient")),
        sortable=("created_at",),
        default_sort=("-created_at",),
    ),
    access=ReadAccess(
        roles=("requester", "agent"),
        scope=RowScope(field="recipient", exempt=("agent",)),
    ),
)
# docs:end notification-entity


# docs:start notify-subscriber
@dry_run_safe  # it writes through ctx.data only: a dry run's rollback undoes it
async def notify_requester(ctx: EventContext) -> None:
    """Record a notification for the requester of the resolved ticket (if it has one).

    A transactional subscriber: the row is written in the same transaction as the mark that
    the event was delivered, so each resolution is notified exactly once."""
    event = ctx.event
    ticket = await ctx.data.get(TICKET, event.subject_id)
    if ticket is None or not ticket["requester"]:
        return
    resolution = ticket["resolution"] or "no resolution given"
    await ctx.data.create(
        NOTIFICATION,
        {
            "recipient": ticket["requester"],
            "ticket": event.subject_id,
            "event_id": event.id,
            "message": f"Your ticket {ticket['title']!r} was resolved: {resolution}",
        },
    )


SUBSCRIBERS = (
    Subscriber(
        name="helpdesk.notify_requester",
        handler=notify_requester,
        actions=(f"{TICKET}.resolve",),
        timeout_s=2.0,  # two statements: a slow one means trouble, retry it
        transactional=True,
    ),
)
# docs:end notify-subscriber
