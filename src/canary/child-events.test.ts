import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { childEvents, type ChildChange } from "./child-events.js";

const created = (kind: string, name: string): ChildChange => ({ action: "Created", kind, name });

describe("childEvents", () => {
  const cases: [string, ChildChange[], { reason: string; message: string }[]][] = [
    ["nothing changed: no Event", [], []],
    [
      "a new app: one Created Event naming every child, in the order applied",
      [
        created("Service", "web-primary"),
        created("Service", "web-secondary"),
        created("DestinationRule", "web"),
        created("VirtualService", "web"),
        created("Service", "web"),
        created("Deployment", "web-primary"),
      ],
      [
        {
          reason: "Created",
          message:
            "Created Service web-primary, Service web-secondary, DestinationRule web, VirtualService web, Service web, Deployment web-primary",
        },
      ],
    ],
    [
      "a step: one Updated Event",
      [{ action: "Updated", kind: "VirtualService", name: "web" }],
      [{ reason: "Updated", message: "Updated VirtualService web" }],
    ],
    [
      "a promotion's end: created, updated and deleted each told once, in that order",
      [
        { action: "Deleted", kind: "Deployment", name: "web-secondary" },
        { action: "Updated", kind: "Deployment", name: "web-primary" },
        created("Service", "web-secondary"),
        { action: "Updated", kind: "VirtualService", name: "web" },
      ],
      [
        { reason: "Created", message: "Created Service web-secondary" },
        { reason: "Updated", message: "Updated Deployment web-primary, VirtualService web" },
        { reason: "Deleted", message: "Deleted Deployment web-secondary" },
      ],
    ],
  ];
  for (const [name, changes, expected] of cases) {
    test(name, () => {
      assert.deepEqual(
        childEvents(changes),
        expected.map((e) => ({ type: "Normal", ...e })),
      );
    });
  }

  test("updates a transition explains are not told again; creations and deletions are", () => {
    const changes: ChildChange[] = [
      { action: "Updated", kind: "VirtualService", name: "web" },
      created("Service", "web-secondary"),
      { action: "Deleted", kind: "Deployment", name: "web-secondary" },
    ];
    assert.deepEqual(
      childEvents(changes, false).map((e) => e.message),
      ["Created Service web-secondary", "Deleted Deployment web-secondary"],
    );
    assert.deepEqual(childEvents([{ action: "Updated", kind: "VirtualService", name: "web" }], false), []);
  });

  test("every change is named in exactly one Event, and there is at most one Event per action", () => {
    const change = fc.record({
      action: fc.constantFrom("Created" as const, "Updated" as const, "Deleted" as const),
      kind: fc.constantFrom("Deployment", "Service", "VirtualService", "DestinationRule"),
      name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
    });
    fc.assert(
      fc.property(fc.array(change, { maxLength: 12 }), (changes) => {
        const events = childEvents(changes);
        assert.equal(new Set(events.map((e) => e.reason)).size, events.length);
        assert.equal(events.length, new Set(changes.map((c) => c.action)).size);
        for (const c of changes) {
          const event = events.find((e) => e.reason === c.action);
          assert.ok(event?.message.includes(`${c.kind} ${c.name}`), JSON.stringify(c));
        }
      }),
    );
  });
});
