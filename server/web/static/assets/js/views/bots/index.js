// views/bots/index.js loads the bots, agents and integrations views (issue 16): the workspace's
// bots with their tokens and setup codes, the integrations (app installations, slash commands,
// event subscriptions and their deliveries), and agents' durable messages in the list.
import './agentmsg.js';
import './bots.js';
import './integrations.js';
