// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

// Tokens that behave the ways real tokens do, for test/sweeper/sweeper.test.ts. Anyone can mint.

/// Balances, allowances, minting and the moves; each token below decides how it answers.
abstract contract BaseToken {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;
    uint8 public constant decimals = 18;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function _spend(address from, uint256 amount) internal {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= amount, "allowance");
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - amount;
    }

    function _move(address from, address to, uint256 amount) internal virtual {
        require(to != address(0), "to zero");
        require(balanceOf[from] >= amount, "balance");
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}

/// An ordinary token: moves and returns true.
contract PlainToken is BaseToken {
    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }
}

/// Reverts every move while paused, and any move from or to a blacklisted address (USDC, USDT).
contract RefusingToken is BaseToken {
    bool public paused;
    mapping(address => bool) public blacklisted;

    function setPaused(bool value) external {
        paused = value;
    }

    function setBlacklisted(address who, bool value) external {
        blacklisted[who] = value;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }

    function _move(address from, address to, uint256 amount) internal override {
        require(!paused, "paused");
        require(!blacklisted[from] && !blacklisted[to], "blacklisted");
        super._move(from, to, amount);
    }
}

/// USDT's interface: transfer and transferFrom return nothing.
contract NoReturnToken is BaseToken {
    function transfer(address to, uint256 amount) external {
        _move(msg.sender, to, amount);
    }

    function transferFrom(address from, address to, uint256 amount) external {
        _spend(from, amount);
        _move(from, to, amount);
    }
}

/// Refuses by answering false, moving nothing (no revert).
contract FalseToken is BaseToken {
    function transfer(address, uint256) external pure returns (bool) {
        return false;
    }

    function transferFrom(address, address, uint256) external pure returns (bool) {
        return false;
    }
}

/// Answers true and moves nothing.
contract LyingToken is BaseToken {
    function transfer(address, uint256) external pure returns (bool) {
        return true;
    }

    function transferFrom(address, address, uint256) external pure returns (bool) {
        return true;
    }
}

/// Burns 1% of every move: the recipient gets 99% of what leaves the sender.
contract FeeToken is BaseToken {
    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }

    function _move(address from, address to, uint256 amount) internal override {
        uint256 fee = amount / 100;
        super._move(from, to, amount - fee);
        balanceOf[from] -= fee;
        totalSupply -= fee;
        emit Transfer(from, address(0), fee);
    }
}

interface ISweeper {
    struct Payout {
        address token;
        address to;
        uint256 amount;
    }

    function sweep(bytes32[] calldata salts, address[] calldata tokens) external;

    function pay(Payout[] calldata items) external payable;
}

interface IDepositForwarder {
    function pull(address token, address payable destination) external returns (bool ok, uint256 amount);
}

/// On each transfer out it tries, before moving, to re-enter the Sweeper (sweep the same deposits
/// again, pay out) and to call the depositing clone (its caller) directly with another
/// destination; it records which attempts succeeded, then moves as asked.
contract ReentrantToken is BaseToken {
    address public sweeper;
    address payable public thief;
    bytes32[] private salts;
    address[] private tokens;
    /// Transfers out during which the attempts were made.
    uint256 public rounds;
    /// Attempts that did not revert.
    uint256 public successes;

    function arm(address sweeper_, address payable thief_, bytes32[] calldata salts_, address[] calldata tokens_) external {
        sweeper = sweeper_;
        thief = thief_;
        salts = salts_;
        tokens = tokens_;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        if (sweeper != address(0)) _reenter(msg.sender);
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        if (sweeper != address(0)) _reenter(msg.sender);
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }

    function _reenter(address caller) private {
        rounds += 1;
        try ISweeper(sweeper).sweep(salts, tokens) {
            successes += 1;
        } catch {}
        try ISweeper(sweeper).pay(new ISweeper.Payout[](0)) {
            successes += 1;
        } catch {}
        for (uint256 i = 0; i < tokens.length; ++i) {
            try IDepositForwarder(caller).pull(tokens[i], thief) returns (bool, uint256) {
                successes += 1;
            } catch {}
        }
        try IDepositForwarder(caller).pull(address(0), thief) returns (bool, uint256) {
            successes += 1;
        } catch {}
    }
}

/// Accepts no native coin.
contract RejectingReceiver {
    receive() external payable {
        revert("no thanks");
    }
}
