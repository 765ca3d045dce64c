// Types for the checker (tsc -p server/web/static, see docs/client.md); the browser never loads
// this file. Names here are global, so a module uses them in JSDoc without importing anything.

// Topic is a name touch() publishes and subscribers test: one of store.js's topics.
type Topic = (typeof import('./assets/js/store.js').topics)[number];

// NatterEvent is an event of the workspace's stream (CONTRACT.md, the event envelope).
interface NatterEvent {
  type: string;
  workspace_id?: string;
  payload?: any;
  cursor?: string;
  channel_id?: string;
  direct_conversation_id?: string;
  message_id?: string;
  actor_id?: string;
  // was: the message a message.updated or message.deleted replaced in the store (store.js).
  was?: any;
}

// Reducer changes state for one event and returns the topics it changed (on() in store.js).
type Reducer = (ev: NatterEvent) => Topic[] | void;

// The client's selectors name HTML elements (never SVG ones), so a query answers an HTMLElement.
interface ParentNode {
  querySelector<E extends HTMLElement = HTMLElement>(selectors: string): E | null;
  querySelectorAll<E extends HTMLElement = HTMLElement>(selectors: string): NodeListOf<E>;
}
interface Element {
  closest<E extends HTMLElement = HTMLElement>(selectors: string): E | null;
}

// PanelSpec is a side panel a feature registers (registerPanel in views/registry.js).
interface PanelSpec {
  title: string;
  // topics redraw the open panel (besides 'panel').
  topics?: Topic[];
  render(body: HTMLElement, panel: any, how: { fresh: boolean; topics: Set<Topic> }): void;
  lazy?: boolean;
}

// What the page's inline script (assets/js/early.js) leaves for the modules; boot.js hands it on.
interface PlaceView { kind: string; id: string }
interface NatterBoot {
  prefetch(path: string, read?: boolean): Promise<any> | null;
  takeEarly(path: string): Promise<Response> | null;
  q(params: Record<string, any>): string;
  workspacePaths: { tail(wsId: string): string; channels(wsId: string): string; dms(wsId: string): string };
  pickWorkspace(list: any[]): { ws: any; byRoute: boolean };
  openingPlace(wsId: string, route: string | null | undefined, channels: Map<string, any>, dms: Map<string, any> | null): string | undefined;
  defaultPlace(wsId: string, channels: Map<string, any>, dms: Map<string, any>): string | undefined;
  placePath(view: PlaceView): string;
  pagePath(view: PlaceView, params: Record<string, any>): string;
  firstPage(place: any): { around_seq?: number; mode?: string };
}
// eslint-disable-next-line no-var
declare var natterBoot: NatterBoot;
